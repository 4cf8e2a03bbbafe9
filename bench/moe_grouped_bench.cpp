// The expert MLP's grouped GEMMs of one Qwen3-MoE layer under --bf16 (--f32: fp32 training's
// operands), as model/blocks/moe_block calls them (ops/ops.h: grouped_matmul,
// grouped_matmul_weight_grad): the qwen3-moe-1b shape of tools/bench_train_e2e.py (C 1024, 8
// experts of I 1536, top-2) at T tokens (995: the chat workload's first step). Per round, the three
// passes of every layer's experts:
//   fwd  gate, up (R, I) = xs · W_gate/upᵀ, ys (R, C) = h · W_downᵀ        (fp32 out)
//   dx   dh (R, I) = dys · W_down, dxs (R, C) = dgate · W_gate + dup · W_up
//   dw   dW_down += dysᵀ h, dW_gate += dgateᵀ xs, dW_up += dupᵀ xs          (per expert)
// Each round draws a new routing (top-2 of softmax over random logits; `--fixed` keeps the first
// one), so every expert's group size changes from round to round as it does from layer to layer
// and step to step in training. Times are the process's CPU seconds (getrusage) and wall seconds
// per round and pass, medians over the rounds after the first; GFLOP/s count 2·R·(products).
// On a shared machine CPU time per thread estimates the idle rate better than wall time. The
// last line before the table hashes the outputs (with --fixed: the same run to run).
//
// usage: bench_moe_grouped [--rounds N] [--tokens T] [--layers L] [--fixed] [--f32]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/half.h"
#include "core/rng.h"
#include "core/thread_pool.h"
#include "ops/ops.h"
#include "process_clock.h"

using namespace sft;

namespace {

using sft::bench::process_cpu_seconds;
using sft::bench::wall_seconds;

constexpr int64_t C = 1024, I = 1536, E = 8, K = 2;

// An input matrix in bf16 (--bf16's operands) and the same values in f32 (fp32 training's).
struct Operand {
  std::vector<uint16_t> bf16;
  std::vector<float> f32;
  ops::View view(bool f32_operands, int64_t rows, int64_t cols) {
    if (f32_operands) return {f32.data(), DType::kF32, rows, cols};
    return {bf16.data(), DType::kBF16, rows, cols};
  }
};

Operand random_operand(size_t n, uint64_t seed, float scale) {
  Rng rng(seed);
  Operand v{std::vector<uint16_t>(n), std::vector<float>(n)};
  for (size_t i = 0; i < n; ++i) {
    v.bf16[i] = f32_to_bf16(scale * (2.0f * rng.uniform() - 1.0f));
    v.f32[i] = bf16_to_f32(v.bf16[i]);
  }
  return v;
}

// A routing as moe_block builds it: top-k of the softmax of random logits, then the sort.
struct Routing {
  std::vector<int64_t> expert_of, offsets, row_of, token_of;
  int64_t T;
  Routing(int64_t tokens, uint64_t seed) : T(tokens) {
    Rng rng(seed);
    std::vector<float> logits(static_cast<size_t>(T * E)), probs(logits.size()),
        weights(static_cast<size_t>(T * K));
    for (auto& l : logits) l = 2.0f * rng.uniform();
    expert_of.resize(static_cast<size_t>(T * K));
    offsets.resize(E + 1);
    row_of.resize(expert_of.size());
    token_of.resize(expert_of.size());
    ops::moe_router_forward(ops::View{probs.data(), DType::kF32, T, E},
                            ops::View{weights.data(), DType::kF32, T, K}, expert_of.data(),
                            ops::View{logits.data(), DType::kF32, T, E}, K, true);
    ops::moe_sort_tokens(offsets.data(), row_of.data(), token_of.data(), expert_of.data(), T, K, E);
  }
  ops::ExpertRouting view() const {
    return {T, K, E, expert_of.data(), offsets.data(), row_of.data(), token_of.data()};
  }
};

struct Times {
  std::vector<double> cpu, wall;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 6, layers = 4;
  int64_t T = 995;
  bool fixed = false, f32_operands = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--rounds" && i + 1 < argc)
      rounds = std::atoi(argv[++i]);
    else if (a == "--tokens" && i + 1 < argc)
      T = std::atoll(argv[++i]);
    else if (a == "--layers" && i + 1 < argc)
      layers = std::atoi(argv[++i]);
    else if (a == "--fixed")
      fixed = true;
    else if (a == "--f32")
      f32_operands = true;
    else {
      std::fprintf(stderr,
                   "[bench] unknown argument '%s' (hint: --rounds N --tokens T --layers L "
                   "--fixed --f32)\n",
                   a.c_str());
      return 2;
    }
  }
  const int64_t R = T * K;
  auto sz = [](int64_t a, int64_t b) { return static_cast<size_t>(a * b); };
  // Per layer its own weights and gradients (as in a step: nothing stays in cache across layers).
  std::vector<Operand> w_gu, w_down;
  std::vector<std::vector<float>> dw_gu, dw_down;
  for (int l = 0; l < layers; ++l) {
    w_gu.push_back(random_operand(sz(E * 2 * I, C), 10 + l, 0.03f));
    w_down.push_back(random_operand(sz(E * C, I), 20 + l, 0.03f));
    dw_gu.emplace_back(sz(E * 2 * I, C), 0.0f);
    dw_down.emplace_back(sz(E * C, I), 0.0f);
  }
  Operand xs = random_operand(sz(R, C), 1, 1.0f), h = random_operand(sz(R, I), 2, 1.0f);
  Operand dys = random_operand(sz(R, C), 3, 1.0f), dgate = random_operand(sz(R, I), 4, 1.0f),
          dup = random_operand(sz(R, I), 5, 1.0f);
  std::vector<float> gate(sz(R, I)), up(sz(R, I)), ys(sz(R, C)), dh(sz(R, I)), dxs(sz(R, C));
  auto bf = [&](Operand& v, int64_t r, int64_t c) { return v.view(f32_operands, r, c); };
  auto f32 = [](std::vector<float>& v, int64_t r, int64_t c) {
    return ops::View{v.data(), DType::kF32, r, c};
  };
  const ops::ExpertBlock gate_rows{I, 2 * I, 0}, up_rows{I, 2 * I, I}, down_rows{C, C, 0};
  const char* passes[3] = {"fwd", "dx", "dw"};
  Times t[3];
  std::printf(
      "grouped GEMMs of %d Qwen3-MoE layers (C %lld, %lld experts of %lld, top-%lld), %lld "
      "tokens, %zu threads, %s operands, %s routing per round\n",
      layers, (long long)C, (long long)E, (long long)I, (long long)K, (long long)T,
      default_thread_pool().size(), f32_operands ? "f32" : "bf16", fixed ? "one" : "a new");
  for (int round = 0; round < rounds; ++round) {
    std::vector<Routing> routes;
    for (int l = 0; l < layers; ++l)
      routes.emplace_back(T, fixed ? 100 + l : 1000 * (round + 1) + l);
    for (int p = 0; p < 3; ++p) {
      const double c0 = process_cpu_seconds(), w0 = wall_seconds();
      for (int l = 0; l < layers; ++l) {
        const ops::ExpertRouting r = routes[static_cast<size_t>(l)].view();
        const ops::View wgu = bf(w_gu[l], E * 2 * I, C), wd = bf(w_down[l], E * C, I);
        if (p == 0) {
          ops::grouped_matmul(f32(gate, R, I), bf(xs, R, C), wgu, r, gate_rows, true, false);
          ops::grouped_matmul(f32(up, R, I), bf(xs, R, C), wgu, r, up_rows, true, false);
          ops::grouped_matmul(f32(ys, R, C), bf(h, R, I), wd, r, down_rows, true, false);
        } else if (p == 1) {
          ops::grouped_matmul(f32(dh, R, I), bf(dys, R, C), wd, r, down_rows, false, false);
          ops::grouped_matmul(f32(dxs, R, C), bf(dgate, R, I), wgu, r, gate_rows, false, false);
          ops::grouped_matmul(f32(dxs, R, C), bf(dup, R, I), wgu, r, up_rows, false, true);
        } else {
          ops::grouped_matmul_weight_grad(f32(dw_down[l], E * C, I), bf(dys, R, C), bf(h, R, I), r,
                                          down_rows);
          ops::grouped_matmul_weight_grad(f32(dw_gu[l], E * 2 * I, C), bf(dgate, R, I),
                                          bf(xs, R, C), r, gate_rows);
          ops::grouped_matmul_weight_grad(f32(dw_gu[l], E * 2 * I, C), bf(dup, R, I), bf(xs, R, C),
                                          r, up_rows);
        }
      }
      const double cpu = process_cpu_seconds() - c0, wall = wall_seconds() - w0;
      if (round > 0) {
        t[p].cpu.push_back(cpu / layers);
        t[p].wall.push_back(wall / layers);
      }
    }
  }
  // A hash of every output of the last round: with --fixed, equal run to run at one thread count
  // (oneDNN's partition of a product, and so its sums, depends on the shape and the team size).
  uint64_t hash = 1469598103934665603ull;
  for (const std::vector<float>* v : {&gate, &up, &ys, &dh, &dxs, &dw_gu[0], &dw_down[0]})
    for (float f : *v) {
      uint32_t bits;
      std::memcpy(&bits, &f, sizeof bits);
      hash = (hash ^ bits) * 1099511628211ull;
    }
  std::printf("output hash %016llx\n", static_cast<unsigned long long>(hash));
  const double threads = double(default_thread_pool().size());
  const double flops = 2.0 * double(R) * double(3 * I * C);  // three products per pass
  std::printf("%-4s %12s %12s %14s %14s\n", "pass", "cpu s/layer", "wall s/layer", "GFLOP/s (wall)",
              "GFLOP/s (cpu)");
  double cpu_all = 0, wall_all = 0;
  for (int p = 0; p < 3; ++p) {
    const double c = median(t[p].cpu), w = median(t[p].wall);
    cpu_all += c, wall_all += w;
    std::printf("%-4s %12.4f %12.4f %14.0f %14.0f\n", passes[p], c, w, flops / w / 1e9,
                flops * threads / c / 1e9);
  }
  std::printf("%-4s %12.4f %12.4f %14.0f %14.0f\n", "all", cpu_all, wall_all,
              3 * flops / wall_all / 1e9, 3 * flops * threads / cpu_all / 1e9);
  return 0;
}
