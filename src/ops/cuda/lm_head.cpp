// The fused LM head + cross-entropy on CUDA (ops.h's contract; ops/lm_head_ce.h explains the
// fusion): never the (T × V) logits, only a chunk of m rows of them at a time.
//
// Per chunk of m computed rows (scored rows, or every row when logits are wanted), padded with
// zero rows to mp (a multiple of kRowQuantum, so that cuBLASLt sees few distinct shapes as the
// scored-row count changes from step to step), and per vocabulary block w_b of VB rows of w:
//   Z_b (mp × nb)  = X_c w_bᵀ                 (cuBLASLt, fp32 accumulation)
//   row pass       : max, exp sums in double, per-row statistics, dZ in place (f32) or as bf16
//   dX_c (mp × C)  = Σ_b dZ_b w_b              (in block order: a fixed sum)
//   dw_b (nb × C) += dZ_bᵀ X_c
// then dX_c's rows go to their rows of dx. The row statistics stay on the device until the end
// of the call, then one download; the host adds them in row order (the CPU's order).
//
// Like the CPU the chunk holds whole rows, so each logit is computed once (6·T·C·V FLOPs with
// both gradients); blocking the vocabulary instead (all T rows × a block) would need each
// logit twice, before and after the row's log-sum-exp. The chunk height sets how often w and
// dw stream from memory (T/m times): the default holds up to kLogitBudget bytes of logits
// (2304 rows at V = 151936 in bf16), the vocabulary block is kVocabBlock (docs/cuda.md has the
// estimate). Scratch: the backend's scratch() (grows once to the largest call, no cudaMalloc
// after that); the Workspace argument is host memory in today's callers and is not used.
//
// A vocabulary shard (tensor parallelism; ops/lm_head_ce.h) keeps this chunking over its own
// rows of w; only the row pass differs (lm_head_shard.cpp: three passes with the group's
// collectives between them), then dx, each rank's dZ W_local, is summed over the group once at
// the end. The group combines host memory (ShardGroup over MPI), so the per-row numbers and dx
// travel through the host; the scratch is the calling thread's own (each rank of a thread
// group lets the others run inside its collectives, which would reuse a shared scratch).
//
// Numerics as the CPU's kernels: f32 x and w compute in fp32; bf16 x and w (no logits wanted)
// as autocast: logits rounded to bf16, the softmax in fp32 with double sums, dlogits rounded to
// bf16 for the two bf16 products; bf16 with logits wanted widens x and w to fp32 first and runs
// the f32 path, as the CPU dispatcher does. With a softcap the bf16 path caps as autocast does
// (lm_head_row.cuh): / cap, tanh and · cap each rounded to bf16, and their three gradients.
#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "ops/cuda/cuda_memory.h"
#include "ops/cuda/cuda_ops.h"
#include "ops/cuda/cuda_views.h"
#include "ops/cuda/lm_head_kernels.h"

namespace sft::ops::cuda {

namespace {

using lm_head_detail::RowPass;

constexpr const char* kOp = "lm_head_cross_entropy";
constexpr int64_t kRowQuantum = 64;
constexpr int64_t kLogitBudget = int64_t{2} << 30;  // bytes of a chunk's logits (+ dlogits)
constexpr int64_t kMaxChunkRows = 8192;
constexpr int64_t kVocabBlock = 16384;

int64_t round_up(int64_t n, int64_t q) {
  return (n + q - 1) / q * q;
}

// Bump allocation in one scratch() region: a measuring pass (base null) sizes it first.
struct Carve {
  std::byte* base = nullptr;
  size_t used = 0;
  template <typename T>
  T* take(int64_t n) {
    T* p = base ? reinterpret_cast<T*>(base + used) : nullptr;
    used += (static_cast<size_t>(std::max<int64_t>(n, 0)) * sizeof(T) + 255) / 256 * 256;
    return p;
  }
};

struct Plan {
  int64_t R = 0, VB = 0;  // rows per chunk, vocabulary block
  bool bf16 = false;      // bf16 operands (x, w, xs, dlogits), f32 logits
  bool widen = false;     // bf16 x and w widened to f32 first (logits wanted)
};

struct Scratch {
  int64_t* rows = nullptr;  // (n) the computed rows
  double *loss = nullptr, *entropy = nullptr;
  int* correct = nullptr;
  void* xs = nullptr;                    // (Rp × C) the chunk's rows of x: f32, or bf16 bits
  float* z = nullptr;                    // (Rp × V) logits, block-major; f32 dlogits in place
  uint16_t* dz16 = nullptr;              // (Rp × V) bf16 dlogits (bf16 plan with gradients)
  float* dxs = nullptr;                  // (Rp × C)
  float *x32 = nullptr, *w32 = nullptr;  // widened x (T × C) and w (V × C)
  float *shard_max = nullptr, *shard_local_max = nullptr;  // (Rp) a shard's row maxima
  double* shard_sums = nullptr;                            // (Rp × kShardSums)
};

Scratch take_scratch(Carve& c, const Plan& p, int64_t n, int64_t T, int64_t C, int64_t V, bool grad,
                     bool shard) {
  const int64_t Rp = round_up(p.R, kRowQuantum);
  Scratch s;
  s.rows = c.take<int64_t>(n);
  s.loss = c.take<double>(n);
  s.entropy = c.take<double>(n);
  s.correct = c.take<int>(n);
  s.xs = p.bf16 ? static_cast<void*>(c.take<uint16_t>(Rp * C)) : c.take<float>(Rp * C);
  s.z = c.take<float>(Rp * V);
  if (p.bf16 && grad) s.dz16 = c.take<uint16_t>(Rp * V);
  if (grad) s.dxs = c.take<float>(Rp * C);
  if (p.widen) {
    s.x32 = c.take<float>(T * C);
    s.w32 = c.take<float>(V * C);
  }
  if (shard) {
    s.shard_max = c.take<float>(Rp);
    s.shard_local_max = c.take<float>(Rp);
    s.shard_sums = c.take<double>(Rp * lm_head_detail::kShardSums);
  }
  return s;
}

View dense(void* data, DType dtype, int64_t rows, int64_t cols) {
  return View{data, dtype, rows, cols, Device::kCuda};
}

void check_views(const View& dx, const View& dw, const View& logits, const View& x, const View& w,
                 double softcap) {
  require_cuda(kOp, {dx, dw, logits, x, w});
  require(x.dtype == DType::kF32 || x.dtype == DType::kBF16, kOp, [&] {
    return "the CUDA kernel takes f32 or bf16 x and w, got " + std::string(dtype_name(x.dtype)) +
           " (the f64 reference runs on the CPU)";
  });
  require(w.dtype == x.dtype, kOp, [&] {
    return "x is " + std::string(dtype_name(x.dtype)) + ", w is " +
           std::string(dtype_name(w.dtype));
  });
  for (const View& v : {dx, dw, logits})
    require(v.empty() || v.dtype == DType::kF32, kOp, [&] {
      return "outputs are f32 for " + std::string(dtype_name(x.dtype)) + " inputs, not " +
             std::string(dtype_name(v.dtype));
    });
  require(x.cols == w.cols && (dx.empty() || dx.numel() == x.numel()) &&
              (dw.empty() || dw.numel() == w.numel()) &&
              (logits.empty() || logits.numel() == x.rows * w.rows),
          kOp, [&] {
            return "x " + shape(x) + " and w " + shape(w) + " do not fit the outputs (dx " +
                   shape(dx) + ", dw " + shape(dw) + ", logits " + shape(logits) + ")";
          });
  require(softcap >= 0 && std::isfinite(softcap), kOp, [&] {
    return "softcap " + std::to_string(softcap) +
           " (hint: 0 = none, else a positive cap such as Gemma 2's 30)";
  });
}

// The calling thread's scratch for a shard (see the top): grows, never shrinks; freed when the
// thread ends.
void* thread_scratch(size_t bytes) {
  struct Held {
    void* data = nullptr;
    size_t size = 0;
    ~Held() { device_free(data); }
  };
  thread_local Held held;
  if (held.size < bytes) {
    device_free(held.data);
    held.data = nullptr;
    held.size = 0;
    held.data = device_alloc(bytes);
    held.size = bytes;
  }
  return held.data;
}

// A shard's checks, the CPU's (every rank checks the same things, so all fail or none); the
// whole vocabulary, whose ids the targets are.
int64_t check_shard(const VocabShard& shard, const View& logits, int64_t V) {
  if (!logits.empty())
    fail("ops", std::string(kOp) +
                    ": no logits from a vocabulary shard (hint: compute them from the gathered "
                    "whole weights)");
  const int64_t padded = V * shard.group->size();
  if (shard.begin < 0 || shard.begin + V > padded || shard.vocab < 0 || shard.vocab > padded)
    fail("ops", std::string(kOp) + ": vocabulary rows [" + std::to_string(shard.begin) + ", " +
                    std::to_string(shard.begin + V) + ") of " + std::to_string(shard.vocab) +
                    " are not a slice of a " + std::to_string(shard.group->size()) +
                    "-way split of " + std::to_string(padded) + " rows");
  return shard.vocab > 0 ? shard.vocab : padded;
}

// The targets (downloaded), checked as the CPU checks them; the rows to compute.
std::vector<int64_t> computed_rows(const std::vector<int64_t>& targets, int64_t V, bool all) {
  std::vector<int64_t> rows;
  for (int64_t t = 0; t < static_cast<int64_t>(targets.size()); ++t) {
    const int64_t y = targets[static_cast<size_t>(t)];
    if (y < -1 || y >= V)
      fail("lm_head", "target " + std::to_string(y) + " at row " + std::to_string(t) +
                          " is outside [0, " + std::to_string(V) +
                          ") (hint: use -1 for positions that are not scored)");
    if (all || y >= 0) rows.push_back(t);
  }
  return rows;
}

Plan make_plan(const LmHeadTuning& tuning, DType dtype, bool logits, bool grad, int64_t n,
               int64_t V) {
  Plan p;
  p.bf16 = dtype == DType::kBF16 && !logits;
  p.widen = dtype == DType::kBF16 && logits;
  const int64_t per_logit = 4 + (p.bf16 && grad ? 2 : 0);
  const int64_t fit = std::clamp<int64_t>(
      kLogitBudget / std::max<int64_t>(V * per_logit, 1) / kRowQuantum * kRowQuantum, kRowQuantum,
      kMaxChunkRows);
  p.R = std::max<int64_t>(1, std::min(tuning.rows_per_chunk > 0 ? tuning.rows_per_chunk : fit, n));
  const int64_t vb = tuning.vocab_block > 0 ? tuning.vocab_block : kVocabBlock;
  p.VB = std::min(vb, V);
  return p;
}

}  // namespace

LmHeadStats lm_head_cross_entropy(View dx, View dw, View logits, View x, View w,
                                  const int64_t* targets, double scale, Workspace /*workspace*/,
                                  VocabShard shard, double softcap, const LmHeadTuning& tuning) {
  check_views(dx, dw, logits, x, w, softcap);
  const int64_t T = x.rows, C = x.cols, V = w.rows;
  const int64_t vocab = shard.group ? check_shard(shard, logits, V) : V;
  const bool grad = !dx.empty() || !dw.empty();
  std::vector<int64_t> host_targets(static_cast<size_t>(T));
  copy_to_host(host_targets.data(), targets, host_targets.size() * sizeof(int64_t));
  const std::vector<int64_t> rows = computed_rows(host_targets, vocab, !logits.empty());
  if (!dx.empty()) cuda::zero(dx);
  LmHeadStats total;
  const int64_t n = static_cast<int64_t>(rows.size());
  if (n == 0 || V == 0) return total;

  const Plan plan = make_plan(tuning, x.dtype, !logits.empty(), grad, n, V);
  const bool sharded = shard.group != nullptr;
  Carve measure;
  take_scratch(measure, plan, n, T, C, V, grad, sharded);
  Carve carve{
      static_cast<std::byte*>(sharded ? thread_scratch(measure.used) : scratch(measure.used))};
  const Scratch s = take_scratch(carve, plan, n, T, C, V, grad, sharded);
  copy_to_device(s.rows, rows.data(), rows.size() * sizeof(int64_t));

  // The operands of the products: bf16 bits, f32, or bf16 widened to f32 in the scratch.
  const DType op = plan.bf16 ? DType::kBF16 : DType::kF32;
  const void* xd = x.data;
  const void* wd = w.data;
  if (plan.widen) {
    cuda::cast(dense(s.x32, DType::kF32, T, C), x);
    cuda::cast(dense(s.w32, DType::kF32, V, C), w);
    xd = s.x32;
    wd = s.w32;
  }
  const size_t op_bytes = dtype_size(op);
  auto w_block = [&](int64_t v0, int64_t nb) {
    return dense(const_cast<std::byte*>(static_cast<const std::byte*>(wd)) +
                     static_cast<size_t>(v0 * C) * op_bytes,
                 op, nb, C);
  };

  for (int64_t c0 = 0; c0 < n; c0 += plan.R) {
    const int64_t m = std::min(plan.R, n - c0), mp = round_up(m, kRowQuantum);
    const int64_t* chunk_rows = s.rows + c0;
    if (plan.bf16)
      lm_head_detail::launch_gather(static_cast<uint16_t*>(s.xs), static_cast<const uint16_t*>(xd),
                                    chunk_rows, m, mp, C);
    else
      lm_head_detail::launch_gather(static_cast<float*>(s.xs), static_cast<const float*>(xd),
                                    chunk_rows, m, mp, C);
    const View xs = dense(s.xs, op, mp, C);
    for (int64_t v0 = 0; v0 < V; v0 += plan.VB) {
      const int64_t nb = std::min(plan.VB, V - v0);
      cuda::matmul(dense(s.z + v0 * mp, DType::kF32, mp, nb), xs, w_block(v0, nb), false, true,
                   false);
    }
    RowPass pass;
    pass.z = s.z;
    pass.dz16 = s.dz16;
    pass.logits = logits.empty() ? nullptr : logits.as<float>();
    pass.rows = chunk_rows;
    pass.targets = targets;
    pass.loss = s.loss + c0;
    pass.entropy = s.entropy + c0;
    pass.correct = s.correct + c0;
    pass.m = m;
    pass.mp = mp;
    pass.V = V;
    pass.VB = plan.VB;
    pass.scale = static_cast<float>(scale);
    pass.softcap = static_cast<float>(softcap);
    pass.round_logits = plan.bf16;
    pass.grad = grad;
    if (sharded) {
      lm_head_detail::ShardPass sp;
      sp.row = pass;
      sp.begin = shard.begin;
      sp.real = std::clamp<int64_t>(vocab - shard.begin, 0, V);
      sp.max = s.shard_max;
      sp.local_max = s.shard_local_max;
      sp.sums = s.shard_sums;
      lm_head_detail::shard_row_pass(total, sp, *shard.group);
    } else {
      lm_head_detail::launch_row_pass(pass);
    }
    if (!grad) continue;
    for (int64_t v0 = 0; v0 < V; v0 += plan.VB) {  // in block order: dX_c's sum is fixed
      const int64_t nb = std::min(plan.VB, V - v0);
      const View dz = plan.bf16 ? dense(s.dz16 + v0 * mp, DType::kBF16, mp, nb)
                                : dense(s.z + v0 * mp, DType::kF32, mp, nb);
      if (!dx.empty())
        cuda::matmul(dense(s.dxs, DType::kF32, mp, C), dz, w_block(v0, nb), false, false, v0 > 0);
      if (!dw.empty())
        cuda::matmul(dense(dw.as<float>() + v0 * C, DType::kF32, nb, C), dz, xs, true, false, true);
    }
    if (!dx.empty()) lm_head_detail::launch_scatter(dx.as<float>(), s.dxs, chunk_rows, m, C);
  }

  if (sharded) {  // the statistics are in total; dx is the sum of every rank's part
    if (!dx.empty()) {
      std::vector<float> sum(static_cast<size_t>(T * C));
      copy_to_host(sum.data(), dx.data, sum.size() * sizeof(float));
      shard.group->sum(std::span<float>(sum));
      copy_to_device(dx.data, sum.data(), sum.size() * sizeof(float));
    }
    return total;
  }
  // The statistics, added on the host in row order over the scored rows.
  std::vector<double> loss(rows.size()), entropy(rows.size());
  std::vector<int> correct(rows.size());
  copy_to_host(loss.data(), s.loss, loss.size() * sizeof(double));
  copy_to_host(entropy.data(), s.entropy, entropy.size() * sizeof(double));
  copy_to_host(correct.data(), s.correct, correct.size() * sizeof(int));
  for (size_t i = 0; i < rows.size(); ++i) {
    if (host_targets[static_cast<size_t>(rows[i])] < 0) continue;
    total.loss_sum += loss[i];
    total.entropy_sum += entropy[i];
    total.correct += correct[i];
    total.count += 1;
  }
  return total;
}

}  // namespace sft::ops::cuda
