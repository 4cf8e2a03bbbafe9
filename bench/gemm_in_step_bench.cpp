// Each GEMM of a training step against the same GEMM alone, measured in one process and
// interleaved, so that the comparison holds on a machine whose speed drifts (a shared VM): a
// round is one real step (forward, backward, the gradient norm and AdamW, which rewrites every
// weight and its bf16 copy, so the step's operands come from memory as in training), then each
// matmul shape the step ran, alone: one untimed call, then as many timed calls as the step made
// (a warm loop, what a GEMM benchmark measures). With --cold, as many again in each of two more
// states, the caches first swept by rewriting 512 MiB: all operands from memory ("cold"), and
// the operands where a step necessarily has them ("as in step"): A read back into the cache (in
// every pass A is what the step has just computed: the layer input, or the output gradient), B
// left in memory (a weight that AdamW rewrote since its last use, or an activation saved in the
// forward pass), and C in memory for dW (the gradient accumulator) but cached for fwd and dx
// (scratch the step reuses layer after layer). Per round and shape: in step / alone; the table
// gives the medians over the rounds after the first (the first pays oneDNN's kernel generation).
// The step's matmuls are those of ops::matmul timed by the op profiler (ops/profile.h; the LM
// head's products run inside its fused op and are not listed). The pass is told by the
// transposes, as ops::Linear calls them: B transposed = forward, none = dx, A transposed = dW
// (accumulating).
//
// usage: bench_gemm_in_step [--shape 0.6b|103m] [--dtype bf16|f32] [--rounds N] [--tokens T]
//                           [--cold]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "core/half.h"
#include "core/rng.h"
#include "model/transformer.h"
#include "ops/ops.h"
#include "ops/profile.h"
#include "optim/adamw.h"
#include "optim/clip.h"
#include "qwen3_shapes.h"

using namespace sft;

namespace {

struct Gemm {
  DType dtype;
  int64_t M, N, K;
  bool ta, tb;
  auto key() const { return std::tie(dtype, M, N, K, ta, tb); }
  bool operator<(const Gemm& o) const { return key() < o.key(); }
  const char* pass() const { return ta ? "dW" : tb ? "fwd" : "dx"; }
  double flops() const { return 2.0 * double(M) * double(N) * double(K); }
};

// "matmul BF16 M=1024 N=4096 K=1024 tb" (ops/cpu/dispatch.cpp's profile detail) → a Gemm.
bool parse_matmul(const std::string& op, Gemm& s) {
  char dtype[16] = {};
  long long M = 0, N = 0, K = 0;
  int used = 0;
  if (std::sscanf(op.c_str(), "matmul %15s M=%lld N=%lld K=%lld%n", dtype, &M, &N, &K, &used) != 4)
    return false;
  const std::string flags = op.substr(static_cast<size_t>(used));
  s = {std::string(dtype) == "BF16" ? DType::kBF16 : DType::kF32,
       M,
       N,
       K,
       flags.find("ta") != std::string::npos,
       flags.find("tb") != std::string::npos};
  return true;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Rewrites a buffer larger than the last-level cache (the next call's operands come from memory).
void evict_caches() {
  static std::vector<float> sweep(size_t{128} << 20);
  for (float& x : sweep) x += 1.0f;
  volatile float sink = sweep[sweep.size() / 2];
  (void)sink;
}

// Reads every cache line of `v`, so that it is cached when the next call starts.
template <typename T>
void read_back(const std::vector<T>& v) {
  double sum = 0;
  for (size_t i = 0; i < v.size(); i += 64 / sizeof(T)) sum += double(v[i]);
  volatile double sink = sum;
  (void)sink;
}

// Where a timed call finds its operands: all in the cache (the loop of one shape), all in
// memory, or each where the step has it (see the top of the file).
enum class Residency { kWarm, kCold, kAsInStep };

// Operands of one shape, allocated once, and the timing of `calls` calls of it alone.
class Alone {
 public:
  explicit Alone(const Gemm& s) : s_(s) {
    Rng rng(5);
    const int64_t a = s.M * s.K, b = s.K * s.N;
    a32_.resize(static_cast<size_t>(a));
    b32_.resize(static_cast<size_t>(b));
    for (float& x : a32_) x = 0.05f * rng.normal();
    for (float& x : b32_) x = 0.05f * rng.normal();
    c_.assign(static_cast<size_t>(s.M * s.N), 0.0f);
    if (s.dtype == DType::kBF16) {
      a16_.resize(a32_.size());
      b16_.resize(b32_.size());
      for (size_t i = 0; i < a32_.size(); ++i) a16_[i] = f32_to_bf16(a32_[i]);
      for (size_t i = 0; i < b32_.size(); ++i) b16_[i] = f32_to_bf16(b32_[i]);
    }
    once();  // primitive creation and first touch, untimed
  }
  // Seconds of `calls` calls, each with its operands where `residency` puts them (the cache
  // preparation is outside the timing).
  double time(int64_t calls, Residency residency) {
    double total = 0;
    for (int64_t i = 0; i < calls; ++i) {
      if (residency != Residency::kWarm) evict_caches();
      if (residency == Residency::kAsInStep) {
        if (s_.dtype == DType::kBF16)
          read_back(a16_);
        else
          read_back(a32_);
        if (!s_.ta) read_back(c_);  // fwd, dx: C is reused scratch; dW: the cold gradient
      }
      const auto t0 = std::chrono::steady_clock::now();
      once();
      total += seconds_since(t0);
    }
    return total;
  }

 private:
  void once() {
    const int64_t ra = s_.ta ? s_.K : s_.M, ca = s_.ta ? s_.M : s_.K;
    const int64_t rb = s_.tb ? s_.N : s_.K, cb = s_.tb ? s_.K : s_.N;
    const bool bf16 = s_.dtype == DType::kBF16;
    const ops::View a =
        bf16 ? ops::view_of(a16_.data(), ra, ca) : ops::view_of(a32_.data(), ra, ca);
    const ops::View b =
        bf16 ? ops::view_of(b16_.data(), rb, cb) : ops::view_of(b32_.data(), rb, cb);
    ops::matmul(ops::view_of(c_.data(), s_.M, s_.N), a, b, s_.ta, s_.tb, /*accumulate=*/s_.ta);
  }

  Gemm s_;
  std::vector<float> a32_, b32_, c_;
  std::vector<uint16_t> a16_, b16_;
};

// The projections whose weight (O × In) the GEMM multiplies, by name ("o", or "q|o" where two
// share a shape); "?" for none.
std::string projection_of(const Gemm& g, const ModelConfig& c) {
  const int64_t C = c.hidden_size, I = c.intermediate_size, Q = c.num_attention_heads * c.head_dim,
                KV = c.num_key_value_heads * c.head_dim;
  const struct {
    const char* name;
    int64_t out, in;
  } projections[] = {{"qkv", Q + 2 * KV, C}, {"q", Q, C},   {"k|v", KV, C}, {"o", C, Q},
                     {"gate|up", I, C},      {"down", C, I}};
  // fwd: (T, O, In); dx: (T, In, O); dW: (O, In, T).
  const int64_t out = g.ta ? g.M : g.tb ? g.N : g.K, in = g.ta ? g.N : g.tb ? g.K : g.N;
  std::string names;
  for (const auto& p : projections)
    if (p.out == out && p.in == in) names += (names.empty() ? "" : "|") + std::string(p.name);
  return names.empty() ? "?" : names;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? NAN : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Samples {
  int64_t calls = 0;                                 // per step
  std::vector<double> step, warm, cold, as_in_step;  // GFLOP/s per round
};

// Per round: in step / alone (the rates of one round, so drift between rounds cancels).
std::vector<double> per_round(const std::vector<double>& step, const std::vector<double>& alone) {
  std::vector<double> r(step.size());
  for (size_t i = 0; i < r.size(); ++i) r[i] = step[i] / alone[i];
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::string shape = "0.6b", dtype = "bf16";
  int64_t rounds = 6, tokens = 1024;
  bool cold = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--cold") {
      cold = true;
    } else if (a == "--shape" && has_value) {
      shape = argv[++i];
    } else if (a == "--dtype" && has_value) {
      dtype = argv[++i];
    } else if (a == "--rounds" && has_value) {
      rounds = std::atoll(argv[++i]);
    } else if (a == "--tokens" && has_value) {
      tokens = std::atoll(argv[++i]);
    } else {
      std::fprintf(stderr,
                   "usage: bench_gemm_in_step [--shape 0.6b|103m] [--dtype bf16|f32] "
                   "[--rounds N] [--tokens T] [--cold]\n");
      return 2;
    }
  }
  if ((shape != "0.6b" && shape != "103m") || (dtype != "bf16" && dtype != "f32") || rounds < 2) {
    std::fprintf(stderr,
                 "bench_gemm_in_step: --shape 0.6b or 103m, --dtype bf16 or f32, "
                 "--rounds ≥ 2\n");
    return 2;
  }
  setenv("SFT_PROFILE", "1", 1);  // read once, at the first op

  const ModelConfig config = bench::qwen3_shape(shape);
  model::Transformer m = model::Transformer::random(config, 1);
  m.set_compute_dtype(dtype == "bf16" ? DType::kBF16 : DType::kF32);
  m.zero_grad();
  model::ParameterSet& params = m.params();
  AdamW adamw(static_cast<size_t>(m.num_parameters()), AdamWOptions{});
  const std::vector<ParamSlice> slices = params.decay_slices();
  model::Batch batch;
  Rng rng(7);
  for (int64_t t = 0; t < tokens; ++t)
    batch.tokens.push_back(static_cast<int64_t>(rng.below(uint64_t(config.vocab_size))));
  batch.labels = batch.tokens;
  const double scale = 1.0 / double(tokens);
  auto step = [&] {
    m.forward(batch, nullptr, scale);
    m.backward(scale);
    const std::span<float> grads = params.grads();
    const double norm = std::sqrt(
        ops::sum_of_squares(ops::view_of(grads.data(), 1, static_cast<int64_t>(grads.size()))));
    adamw.step(params.values(), grads, slices, 1e-5, params.bf16_arena(),
               clip_coefficient(norm, 1.0));
    params.zero_grads();
  };

  std::printf("Qwen3 %s shape, %s, %lld tokens, %lld rounds (the first not counted)%s\n",
              shape.c_str(), dtype.c_str(), static_cast<long long>(tokens),
              static_cast<long long>(rounds), cold ? ", warm, cold and as in step" : "");
  std::map<Gemm, Samples> samples;
  std::map<Gemm, Alone> alone;
  for (int64_t r = 0; r < rounds; ++r) {
    ops::reset_op_profile();
    const auto t0 = std::chrono::steady_clock::now();
    step();
    const double step_s = seconds_since(t0);
    std::vector<std::pair<Gemm, ops::OpTime>> in_step;
    for (const ops::OpTime& t : ops::op_profile()) {
      Gemm s;
      if (parse_matmul(t.op, s)) in_step.push_back({s, t});
    }
    std::printf("round %lld: step %.2f s, %zu GEMM shapes\n", static_cast<long long>(r), step_s,
                in_step.size());
    for (const auto& [s, t] : in_step) {
      Alone& a = alone.try_emplace(s, s).first->second;
      const double warm_s = a.time(t.calls, Residency::kWarm);
      const double cold_s = cold ? a.time(t.calls, Residency::kCold) : NAN;
      const double as_in_step_s = cold ? a.time(t.calls, Residency::kAsInStep) : NAN;
      if (r == 0) continue;
      Samples& x = samples[s];
      const double work = s.flops() * double(t.calls) * 1e-9;
      x.calls = t.calls;
      x.step.push_back(work / t.seconds);
      x.warm.push_back(work / warm_s);
      if (cold) {
        x.cold.push_back(work / cold_s);
        x.as_in_step.push_back(work / as_in_step_s);
      }
    }
  }

  std::printf(
      "\n| GEMM | M × N × K | calls / step | in step GFLOP/s | alone, warm | "
      "in step / warm: median [min, max]%s |\n|---|---|---|---|---|---|%s\n",
      cold ? " | alone, cold | in step / cold | alone, as in step | in step / as in step" : "",
      cold ? "---|---|---|---|" : "");
  for (const auto& [s, x] : samples) {
    const std::vector<double> over_warm = per_round(x.step, x.warm);
    const auto [lo, hi] = std::minmax_element(over_warm.begin(), over_warm.end());
    std::printf("| %s %s %s | %lld × %lld × %lld | %lld | %.0f | %.0f | %.2f [%.2f, %.2f]",
                projection_of(s, config).c_str(), s.pass(),
                s.dtype == DType::kBF16 ? "bf16" : "f32", static_cast<long long>(s.M),
                static_cast<long long>(s.N), static_cast<long long>(s.K),
                static_cast<long long>(x.calls), median(x.step), median(x.warm), median(over_warm),
                *lo, *hi);
    if (cold)
      std::printf(" | %.0f | %.2f | %.0f | %.2f", median(x.cold), median(per_round(x.step, x.cold)),
                  median(x.as_in_step), median(per_round(x.step, x.as_in_step)));
    std::printf(" |\n");
  }
  return 0;
}
