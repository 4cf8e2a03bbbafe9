// ops::matmul_4bit (QLoRA's frozen base) at one shape's projections, against the same product
// with W already dense in the compute dtype (ops::matmul_bf16 / matmul: the ceiling, what
// bitsandbytes' CPU path reaches after dequantizing the whole weight), interleaved call by call
// so that a drifting shared machine moves both alike. Per projection and pass (fwd: a · Wᵀ,
// dx: g · W): GFLOP/s over wall time and over process CPU time (getrusage, all threads), the
// medians over the rounds after the first (the first pays oneDNN's kernel generation). With
// bf16 on an AMX CPU matmul_4bit runs its own tile product; its library path (dequantized panels
// into oneDNN) runs beside it as a third contestant.
//
// --lora_rank r adds LoRA's rank-r product to every call (y += u Bᵀ forward, dx += du A for
// dx): the 4-bit call sums it in as a LowRankTerm (folded into the AMX tiles), the library
// path and the dense product add it as a separate product afterwards, as before the fold.
//
// usage: bench_matmul_4bit [--shape 1.7b|4b|8b] [--tokens M] [--rounds N] [--dtype bf16|f32]
//                          [--lora_rank r] [--only dequant]   (the dequantization rate alone)
//                          [--only bf16_out]  (forwards into f32 c + cast vs into bf16 c)
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/half.h"
#include "ops/cpu/bnb_quant.h"
#include "ops/cpu/dequant4.h"
#include "ops/cpu/matmul_4bit_amx.h"
#include "ops/ops.h"

using namespace sft;

namespace {

struct Projection {
  const char* name;
  int64_t rows, cols;  // W (out_features × in_features)
};

// Qwen3's decoder projections at hidden H, intermediate I, 128-wide heads (q, k/v, o, gate/up,
// down), as tools/bench_qlora_memory.py's shapes.
std::vector<Projection> projections(const std::string& shape) {
  const int64_t H = shape == "8b" ? 4096 : shape == "4b" ? 2560 : 2048;
  const int64_t I = shape == "8b" ? 12288 : shape == "4b" ? 9728 : 6144;
  const int64_t q = shape == "1.7b" ? 16 * 128 : 32 * 128, kv = 8 * 128;
  return {{"q", q, H}, {"k/v", kv, H}, {"o", H, q}, {"gate/up", I, H}, {"down", H, I}};
}

struct Clock {
  double wall, cpu;
  static Clock now() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    const auto secs = [](timeval t) { return double(t.tv_sec) + 1e-6 * double(t.tv_usec); };
    return {
        std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(),
        secs(u.ru_utime) + secs(u.ru_stime)};
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

std::vector<float> normal(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// A projection's weight drawn (normal, 0.02) and quantized to NF4 in blocks of 64, as a
// Weight4Bit over its own bytes.
struct Nf4Weight {
  std::vector<float> drawn;
  std::vector<uint8_t> packed;
  std::vector<float> absmax;
  ops::Weight4Bit weight;

  explicit Nf4Weight(const Projection& p)
      : drawn(normal(static_cast<size_t>(p.rows * p.cols), 1, 0.02f)),
        packed(static_cast<size_t>((p.rows * p.cols + 1) / 2)),
        absmax(static_cast<size_t>(ops::cpu::quant_block_count(p.rows * p.cols, 64))) {
    ops::cpu::quantize_4bit(drawn, 64, ops::Quant4Type::kNf4, packed, absmax);
    weight = {ops::view_of(packed.data(), 1, static_cast<int64_t>(packed.size())),
              ops::view_of(absmax.data(), 1, static_cast<int64_t>(absmax.size())),
              p.rows,
              p.cols,
              64,
              ops::Quant4Type::kNf4};
  }
};

// ops/cpu/dequant4.h alone, on this thread: a 6144 × 2048 NF4 weight into a 2^21-value buffer
// a panel at a time, as matmul_4bit does; billions of elements per CPU second, f32 and bf16.
void dequantization_rate(int64_t rounds) {
  const int64_t n = int64_t{6144} * 2048, panel = int64_t{1} << 21;
  std::vector<uint8_t> packed(static_cast<size_t>(n / 2));
  for (size_t i = 0; i < packed.size(); ++i) packed[i] = static_cast<uint8_t>(i * 131 + 7);
  std::vector<float> absmax(static_cast<size_t>(n / 64), 0.02f), f32(static_cast<size_t>(panel));
  std::vector<uint16_t> bf16(static_cast<size_t>(panel));
  const ops::cpu::Packed4 w{packed.data(), absmax.data(),
                            ops::cpu::quant4_code(ops::Quant4Type::kNf4).data(), 64};
  std::vector<double> f32_cpu, bf16_cpu;
  for (int64_t r = 0; r < rounds; ++r) {
    for (auto [out, times] : {std::pair{static_cast<void*>(f32.data()), &f32_cpu},
                              std::pair{static_cast<void*>(bf16.data()), &bf16_cpu}}) {
      const Clock t0 = Clock::now();
      for (int64_t first = 0; first < n; first += panel) {
        if (out == f32.data())
          ops::cpu::dequantize4(w, first, std::min(panel, n - first), f32.data());
        else
          ops::cpu::dequantize4(w, first, std::min(panel, n - first), bf16.data());
      }
      times->push_back(Clock::now().cpu - t0.cpu);
    }
  }
  std::printf(
      "\ndequantize4 alone (one thread, 6144 × 2048 NF4): %.2f G elements per CPU s to "
      "f32, %.2f to bf16\n",
      1e-9 * double(n) / median(f32_cpu), 1e-9 * double(n) / median(bf16_cpu));
}

// The forward products the bf16 step keeps only rounded (q, k/v, gate/up: a · Wᵀ with LoRA's
// term), two ways interleaved: an f32 c then ops::cast into bf16 (before), and matmul_4bit
// writing the bf16 c itself (after; the same bits). Medians of CPU seconds (all threads).
void bf16_output_rate(const std::string& shape, int64_t M, int64_t rank, int64_t rounds) {
  std::printf(
      "\nbf16 output, Qwen3-%s forwards, M %lld, LoRA rank %lld: f32 c + cast vs bf16 c\n\n"
      "| W | f32 c + cast CPU ms | bf16 c CPU ms | after / before |\n|---|---|---|---|\n",
      shape.c_str(), static_cast<long long>(M), static_cast<long long>(rank));
  double before_total = 0, after_total = 0;
  for (const Projection& p : projections(shape)) {
    if (std::string(p.name) == "o" || std::string(p.name) == "down") continue;  // f32 outputs
    const int64_t K = p.cols, N = p.rows;
    const Nf4Weight nf4(p);
    const ops::Weight4Bit& q = nf4.weight;
    auto bf16_of = [](const std::vector<float>& v) {
      std::vector<uint16_t> out(v.size());
      for (size_t i = 0; i < v.size(); ++i) out[i] = f32_to_bf16(v[i]);
      return out;
    };
    const std::vector<uint16_t> a = bf16_of(normal(static_cast<size_t>(M * K), 2, 1.0f)),
                                u = bf16_of(normal(static_cast<size_t>(M * rank), 3, 1.0f)),
                                b = bf16_of(normal(static_cast<size_t>(N * rank), 4, 0.02f));
    const ops::LowRankTerm term = rank > 0 ? ops::LowRankTerm{ops::view_of(u.data(), M, rank),
                                                              ops::view_of(b.data(), N, rank)}
                                           : ops::LowRankTerm{};
    std::vector<float> c32(static_cast<size_t>(M * N));
    std::vector<uint16_t> c16(c32.size());
    const ops::View av = ops::view_of(a.data(), M, K), c32v = ops::view_of(c32.data(), M, N),
                    c16v = ops::view_of(c16.data(), M, N);
    std::vector<double> before, after;
    for (int64_t r = 0; r < rounds; ++r) {
      const Clock t0 = Clock::now();
      ops::matmul_4bit(c32v, av, q, true, false, term);
      ops::cast(c16v, c32v);
      const Clock t1 = Clock::now();
      ops::matmul_4bit(c16v, av, q, true, false, term);
      const Clock t2 = Clock::now();
      if (r == 0) continue;
      before.push_back(t1.cpu - t0.cpu);
      after.push_back(t2.cpu - t1.cpu);
    }
    before_total += median(before);
    after_total += median(after);
    std::printf("| %s %lld × %lld | %.1f | %.1f | %.3f |\n", p.name, static_cast<long long>(p.rows),
                static_cast<long long>(p.cols), 1e3 * median(before), 1e3 * median(after),
                median(after) / median(before));
    std::fflush(stdout);
  }
  std::printf("\nsum of medians: f32 c + cast %.1f ms, bf16 c %.1f ms CPU (%.3f)\n",
              1e3 * before_total, 1e3 * after_total, after_total / before_total);
}

}  // namespace

int main(int argc, char** argv) {
  std::string shape = "1.7b", dtype = "bf16";
  int64_t M = 1024, rounds = 4, rank = 0;
  bool dequant_only = false, bf16_out_only = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--shape")
      shape = argv[i + 1];
    else if (flag == "--tokens")
      M = std::atoll(argv[i + 1]);
    else if (flag == "--rounds")
      rounds = std::atoll(argv[i + 1]);
    else if (flag == "--dtype")
      dtype = argv[i + 1];
    else if (flag == "--lora_rank")
      rank = std::atoll(argv[i + 1]);
    else if (flag == "--only" && std::string(argv[i + 1]) == "dequant")
      dequant_only = true;
    else if (flag == "--only" && std::string(argv[i + 1]) == "bf16_out")
      bf16_out_only = true;
    else {
      std::fprintf(stderr,
                   "[bench] unknown flag %s; usage: bench_matmul_4bit [--shape 1.7b|4b|8b]"
                   " [--tokens M] [--rounds N] [--dtype bf16|f32] [--lora_rank r]"
                   " [--only dequant|bf16_out]\n",
                   argv[i]);
      return 2;
    }
  }
  if (dequant_only) {
    dequantization_rate(rounds);
    return 0;
  }
  if (bf16_out_only) {
    bf16_output_rate(shape, M, rank, rounds);
    return 0;
  }
  const bool bf16 = dtype == "bf16";
  std::printf(
      "matmul_4bit vs dense %s, Qwen3-%s projections, M %lld, LoRA rank %lld, %lld rounds "
      "(medians of rounds 2..)\n4-bit: matmul_4bit as dispatched (AMX tiles with bf16 on AMX); "
      "library: its "
      "oneDNN panel path\n\n| W | pass | 4-bit GFLOP/s wall | library | dense | 4-bit / dense | "
      "4-bit GFLOP/s per CPU s | library | dense |\n|---|---|---|---|---|---|---|---|---|\n",
      dtype.c_str(), shape.c_str(), static_cast<long long>(M), static_cast<long long>(rank),
      static_cast<long long>(rounds));
  double total4 = 0, total_library = 0, total_dense = 0, cpu4_total = 0, cpu_library_total = 0,
         cpu_dense_total = 0;
  for (const Projection& p : projections(shape)) {
    const Nf4Weight nf4(p);
    const ops::Weight4Bit& q = nf4.weight;
    std::vector<float> dense(nf4.drawn.size());
    ops::cpu::dequantize_4bit(nf4.packed, nf4.absmax, 64, ops::Quant4Type::kNf4, dense);
    std::vector<uint16_t> dense_bf16(dense.size());
    for (size_t i = 0; i < dense.size(); ++i) dense_bf16[i] = f32_to_bf16(dense[i]);
    for (bool trans_w : {true, false}) {
      const int64_t K = trans_w ? p.cols : p.rows, N = trans_w ? p.rows : p.cols;
      std::vector<float> a = normal(static_cast<size_t>(M * K), 2, 1.0f), c(size_t(M * N));
      std::vector<uint16_t> a_bf16(a.size());
      for (size_t i = 0; i < a.size(); ++i) a_bf16[i] = f32_to_bf16(a[i]);
      const ops::View av = bf16 ? ops::view_of(a_bf16.data(), M, K) : ops::view_of(a.data(), M, K);
      // The LoRA term: u (M, r) and B laid out as op() reads W ((N, r) or (r, N)).
      std::vector<float> u = normal(static_cast<size_t>(M * rank), 3, 1.0f),
                         lb = normal(static_cast<size_t>(N * rank), 4, 0.02f);
      std::vector<uint16_t> u16(u.size()), lb16(lb.size());
      for (size_t i = 0; i < u.size(); ++i) u16[i] = f32_to_bf16(u[i]);
      for (size_t i = 0; i < lb.size(); ++i) lb16[i] = f32_to_bf16(lb[i]);
      const int64_t lb_rows = trans_w ? N : rank, lb_cols = trans_w ? rank : N;
      ops::LowRankTerm term;
      if (rank > 0)
        term = bf16 ? ops::LowRankTerm{ops::view_of(u16.data(), M, rank),
                                       ops::view_of(lb16.data(), lb_rows, lb_cols)}
                    : ops::LowRankTerm{ops::view_of(u.data(), M, rank),
                                       ops::view_of(lb.data(), lb_rows, lb_cols)};
      const ops::View cv = ops::view_of(c.data(), M, N);
      const std::function<void()> four_bit = [&] {
        ops::matmul_4bit(cv, av, q, trans_w, false, term);
      };
      const std::function<void()> library = [&] {
        ops::cpu::matmul_4bit_library(cv, av, q, trans_w, false, term);
      };
      const std::function<void()> full = [&] {
        if (bf16)
          ops::matmul_bf16(c.data(), a_bf16.data(), dense_bf16.data(), M, N, K, false, trans_w,
                           false, K, p.cols, N);
        else
          ops::matmul(c.data(), a.data(), dense.data(), M, N, K, false, trans_w, false, K, p.cols,
                      N);
        if (rank > 0) ops::matmul(cv, term.a, term.b, false, trans_w, true);
      };
      std::vector<double> wall4, cpu4, wall_l, cpu_l, wall_d, cpu_d;
      for (int64_t r = 0; r < rounds; ++r) {
        for (auto [run, wall, cpu] :
             {std::tuple{&four_bit, &wall4, &cpu4}, std::tuple{&library, &wall_l, &cpu_l},
              std::tuple{&full, &wall_d, &cpu_d}}) {
          const Clock t0 = Clock::now();
          (*run)();
          const Clock t1 = Clock::now();
          if (r == 0) continue;
          wall->push_back(t1.wall - t0.wall);
          cpu->push_back(t1.cpu - t0.cpu);
        }
      }
      const double gflop = 2e-9 * double(M) * double(N) * double(K);
      total4 += median(wall4);
      total_library += median(wall_l);
      total_dense += median(wall_d);
      cpu4_total += median(cpu4);
      cpu_library_total += median(cpu_l);
      cpu_dense_total += median(cpu_d);
      std::printf("| %s %lld × %lld | %s | %.0f | %.0f | %.0f | %.2f | %.0f | %.0f | %.0f |\n",
                  p.name, static_cast<long long>(p.rows), static_cast<long long>(p.cols),
                  trans_w ? "fwd" : "dx", gflop / median(wall4), gflop / median(wall_l),
                  gflop / median(wall_d), median(wall_d) / median(wall4), gflop / median(cpu4),
                  gflop / median(cpu_l), gflop / median(cpu_d));
      std::fflush(stdout);
    }
  }
  dequantization_rate(rounds);
  std::printf(
      "\nsum of medians: 4-bit %.3f s, library %.3f s, dense %.3f s wall (4-bit / dense %.2f, "
      "4-bit / library %.2f); 4-bit %.3f s, library %.3f s, dense %.3f s CPU (4-bit / dense "
      "%.2f, 4-bit / library %.2f)\n",
      total4, total_library, total_dense, total4 / total_dense, total4 / total_library, cpu4_total,
      cpu_library_total, cpu_dense_total, cpu4_total / cpu_dense_total,
      cpu4_total / cpu_library_total);
  return 0;
}
