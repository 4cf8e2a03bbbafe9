// ops::lm_head_cross_entropy on views, on the CPU: the fused kernels of ops/lm_head_ce.h, on
// the caller's workspace (sized by lm_head_workspace_bytes; each rank of a thread ShardGroup
// passes its own, as MPI ranks have). The soft-cap is CUDA-only so far.
#include <algorithm>
#include <string>

#include "ops/cpu/cpu_ops.h"
#include "ops/lm_head_ce.h"
#include "ops/ops.h"

namespace sft::ops::cpu {

namespace {

template <typename T>
T* data_or_null(const View& v) {
  return v.empty() ? nullptr : v.as<T>();
}

void check(const View& dx, const View& dw, const View& logits, const View& x, const View& w) {
  const DType out = x.dtype == DType::kBF16 ? DType::kF32 : x.dtype;
  for (const View& v : {dx, dw, logits})
    if (!v.empty() && v.dtype != out)
      fail("ops", "lm_head_cross_entropy: outputs are " + std::string(dtype_name(out)) + " for " +
                      std::string(dtype_name(x.dtype)) + " inputs, not " +
                      std::string(dtype_name(v.dtype)));
  if (w.dtype != x.dtype)
    fail("ops", "lm_head_cross_entropy: x is " + std::string(dtype_name(x.dtype)) + ", w is " +
                    std::string(dtype_name(w.dtype)));
  if (x.cols != w.cols || (!dx.empty() && dx.numel() != x.numel()) ||
      (!dw.empty() && dw.numel() != w.numel()) ||
      (!logits.empty() && logits.numel() != x.rows * w.rows))
    fail("ops", "lm_head_cross_entropy: x (" + std::to_string(x.rows) + ", " +
                    std::to_string(x.cols) + ") and w (" + std::to_string(w.rows) + ", " +
                    std::to_string(w.cols) + ") do not fit the outputs");
}

}  // namespace

}  // namespace sft::ops::cpu

namespace sft::ops {

size_t lm_head_workspace_bytes(const LmHeadShape& s) {
  const int64_t T = s.rows, C = s.hidden, V = s.vocab;
  switch (s.dtype) {
    case DType::kF64:
      return lm_head_kernel_workspace_bytes<double>(T, C, V, s.shard);
    case DType::kBF16:
      // Full logits: the bf16 values widened to fp32 (x, then w), then the float kernel's. A
      // model sized for logits also runs the fused bf16 kernel (a step without them), whose
      // widened plan may need more: the larger of the two.
      if (s.logits && !s.shard)
        return std::max(Workspace::bytes_for<float>(T * C) + Workspace::bytes_for<float>(V * C) +
                            lm_head_kernel_workspace_bytes<float>(T, C, V, false),
                        lm_head_kernel_workspace_bytes<uint16_t>(T, C, V, false));
      return lm_head_kernel_workspace_bytes<uint16_t>(T, C, V, s.shard);
    default:
      return lm_head_kernel_workspace_bytes<float>(T, C, V, s.shard);
  }
}

}  // namespace sft::ops

namespace sft::ops::cpu {

LmHeadStats lm_head_cross_entropy(View dx, View dw, View logits, View x, View w,
                                  const int64_t* targets, double scale, Workspace memory,
                                  VocabShard shard, double softcap) {
  if (!(softcap >= 0))
    fail("ops", "lm_head_cross_entropy: softcap " + std::to_string(softcap) +
                    " (hint: 0 for none, or a positive cap)");
  LmHeadWorkspace ws{{}, memory};
  check(dx, dw, logits, x, w);
  const int64_t T = x.rows, C = x.cols, V = w.rows;
  if (shard.weight_blocks) {
    if (shard.group || x.dtype != DType::kF32 || !logits.empty())
      fail("ops",
           "lm_head_cross_entropy: weight blocks are for an fp32 head without a vocabulary "
           "shard or full logits (hint: gather the whole weight instead)");
    return ops::lm_head_cross_entropy(
        data_or_null<float>(dx), data_or_null<float>(dw), static_cast<float*>(nullptr),
        x.as<float>(), static_cast<const float*>(nullptr), targets, static_cast<float>(scale), T, C,
        V, ws, 0, nullptr, 0, static_cast<float>(softcap), shard.weight_blocks);
  }
  if (shard.group) {
    // Every rank checks the same things (shapes agree over the group), so they all fail or none.
    if (!logits.empty())
      fail("ops",
           "lm_head_cross_entropy: no logits from a vocabulary shard (hint: compute them from "
           "the gathered whole weights)");
    const int64_t padded = V * shard.group->size();
    if (shard.begin < 0 || shard.begin + V > padded || shard.vocab < 0 || shard.vocab > padded)
      fail("ops", "lm_head_cross_entropy: vocabulary rows [" + std::to_string(shard.begin) + ", " +
                      std::to_string(shard.begin + V) + ") of " + std::to_string(shard.vocab) +
                      " are not a slice of a " + std::to_string(shard.group->size()) +
                      "-way split of " + std::to_string(padded) + " rows");
    if (x.dtype == DType::kBF16)
      return lm_head_cross_entropy_bf16(data_or_null<float>(dx), data_or_null<float>(dw),
                                        x.as<uint16_t>(), w.as<uint16_t>(), targets,
                                        static_cast<float>(scale), T, C, V, ws, shard.begin,
                                        shard.group, shard.vocab, static_cast<float>(softcap));
    if (x.dtype == DType::kF64)
      return ops::lm_head_cross_entropy(data_or_null<double>(dx), data_or_null<double>(dw),
                                        static_cast<double*>(nullptr), x.as<double>(),
                                        w.as<double>(), targets, scale, T, C, V, ws, shard.begin,
                                        shard.group, shard.vocab, softcap);
    return ops::lm_head_cross_entropy(data_or_null<float>(dx), data_or_null<float>(dw),
                                      static_cast<float*>(nullptr), x.as<float>(), w.as<float>(),
                                      targets, static_cast<float>(scale), T, C, V, ws, shard.begin,
                                      shard.group, shard.vocab, static_cast<float>(softcap));
  }
  if (x.dtype == DType::kBF16 && logits.empty())
    return lm_head_cross_entropy_bf16(data_or_null<float>(dx), data_or_null<float>(dw),
                                      x.as<uint16_t>(), w.as<uint16_t>(), targets,
                                      static_cast<float>(scale), T, C, V, ws, 0, nullptr, 0,
                                      static_cast<float>(softcap));
  if (x.dtype == DType::kBF16) {
    // Full logits wanted (debug dumps, decoding, export checks): the bf16 values in fp32.
    const size_t need = lm_head_workspace_bytes(
        {.dtype = DType::kBF16, .rows = T, .hidden = C, .vocab = V, .logits = true});
    memory.require("lm_head_cross_entropy", need);
    float* x32 = memory.take<float>(T * C, "lm_head_cross_entropy");
    float* w32 = memory.take<float>(V * C, "lm_head_cross_entropy");
    cpu::cast(view_of(x32, T, C), x);
    cpu::cast(view_of(w32, V, C), w);
    return cpu::lm_head_cross_entropy(dx, dw, logits, view_of(x32, T, C), view_of(w32, V, C),
                                      targets, scale, memory.rest(), {}, softcap);
  }
  if (x.dtype == DType::kF64)
    return ops::lm_head_cross_entropy(data_or_null<double>(dx), data_or_null<double>(dw),
                                      data_or_null<double>(logits), x.as<double>(), w.as<double>(),
                                      targets, scale, T, C, V, ws, 0, nullptr, 0, softcap);
  return ops::lm_head_cross_entropy(data_or_null<float>(dx), data_or_null<float>(dw),
                                    data_or_null<float>(logits), x.as<float>(), w.as<float>(),
                                    targets, static_cast<float>(scale), T, C, V, ws, 0, nullptr, 0,
                                    static_cast<float>(softcap));
}

}  // namespace sft::ops::cpu
