// Forward + backward throughput of the CPU model on a packed batch, as tokens/s and achieved
// GFLOP/s. Default shape: Qwen3-0.6B (28 layers, hidden 1024, intermediate 3072, 16 heads, 8 kv
// heads, head_dim 128, vocab 151936, tied) with random weights, on a 1,024-token batch of four
// packed documents, fp32. Compare with tools/bench_transformers_train_step.py.
//
// usage: bench_train_step [--shape 0.6b|103m] [--layers L] [--steps N] [--tokens T] [--bf16 1]
// (--bf16 1: bf16 compute as `sft train --bf16` runs it, the LM head's gradient fused into the
// forward as the trainer asks for it.)
// FLOPs counted: 6 · T · (linear + LM-head parameters) + attention 3 · 4 · H · D · Σ n(n+1)/2
// (causal pairs only); i.e. the model's useful work, not what the kernels happen to compute.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/rng.h"
#include "core/thread_pool.h"
#include "model/transformer.h"
#include "qwen3_shapes.h"

using namespace sft;

int main(int argc, char** argv) {
  int64_t layers = 0, steps = 3, tokens = 1024;
  std::string shape = "0.6b";
  bool bf16 = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const int64_t v = std::atoll(argv[i + 1]);
    if (a == "--shape")
      shape = argv[i + 1];
    else if (a == "--bf16")
      bf16 = v != 0;
    else if (a == "--layers")
      layers = v;
    else if (a == "--steps")
      steps = v;
    else if (a == "--tokens")
      tokens = v;
  }
  const ModelConfig c = bench::qwen3_shape(shape, layers);
  layers = c.num_hidden_layers;

  auto t0 = std::chrono::steady_clock::now();
  model::Transformer m = model::Transformer::random(c, 1);
  if (bf16) m.set_compute_dtype(DType::kBF16);
  m.zero_grad();
  const double init_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // Four documents, as a packer would produce: 3/8, 1/4, 3/16, rest.
  model::Batch b;
  b.doc_lengths = {tokens * 3 / 8, tokens / 4, tokens * 3 / 16};
  b.doc_lengths.push_back(tokens - b.doc_lengths[0] - b.doc_lengths[1] - b.doc_lengths[2]);
  Rng rng(7);
  for (int64_t t = 0; t < tokens; ++t) {
    b.tokens.push_back(static_cast<int64_t>(rng.below(static_cast<uint64_t>(c.vocab_size))));
  }
  b.labels = b.tokens;

  const double C = double(c.hidden_size), I = double(c.intermediate_size),
               H = double(c.num_attention_heads), Hkv = double(c.num_key_value_heads),
               D = double(c.head_dim), V = double(c.vocab_size), T = double(tokens);
  const double linear_params =
      double(layers) * (C * H * D * 2 + C * Hkv * D * 2 + 3 * C * I) + V * C;
  double pairs = 0;
  for (int64_t n : b.doc_lengths) pairs += double(n) * double(n + 1) / 2;
  const double flops = 6 * T * linear_params + 3 * 4 * H * D * pairs * double(layers);

  std::printf("model: %s shape, %lld layers, %.1fM parameters, %s; init %.1f s; threads %zu\n",
              shape.c_str(), static_cast<long long>(layers), double(m.num_parameters()) / 1e6,
              bf16 ? "bf16" : "fp32", init_s, default_thread_pool().size());
  int64_t scored = 0;  // the loss's token count (the trainer's normaliser)
  for (const int64_t n : b.doc_lengths) scored += n - 1;
  double best = 1e30, total = 0;
  for (int64_t s = 0; s <= steps; ++s) {  // step 0 warms up (arena allocation, page faults)
    auto a = std::chrono::steady_clock::now();
    const double scale = 1.0 / static_cast<double>(scored);
    const model::LossStats st = bf16 ? m.forward(b, nullptr, scale) : m.forward(b);
    auto mid = std::chrono::steady_clock::now();
    m.backward(bf16 ? scale : 1.0f / static_cast<float>(st.count));
    auto e = std::chrono::steady_clock::now();
    const double fwd = std::chrono::duration<double>(mid - a).count();
    const double sec = std::chrono::duration<double>(e - a).count();
    std::printf("step %lld: loss %.4f  forward %.2f s  forward+backward %.2f s%s\n",
                static_cast<long long>(s), st.loss_sum / double(st.count), fwd, sec,
                s == 0 ? "  (warm-up)" : "");
    if (s > 0) {
      best = std::min(best, sec);
      total += sec;
    }
  }
  const double mean = total / double(steps);
  std::printf(
      "tokens/s %.1f (mean of %lld steps, best %.1f); model GFLOP/step %.1f; "
      "achieved %.1f GFLOP/s\n",
      T / mean, static_cast<long long>(steps), T / best, flops / 1e9, flops / mean / 1e9);
  return 0;
}
