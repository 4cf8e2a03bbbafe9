// ops::lm_head_cross_entropy on views, on the CPU: the fused kernels of ops/lm_head_ce.h,
// with one workspace grown to the largest call and reused (the step loop does not allocate).
// The workspace is per calling thread: the model calls from one thread, so a training process
// holds one; the ranks of a thread ShardGroup (tests) are threads of one process and each need
// their own, as MPI ranks have.
#include <string>
#include <vector>

#include "ops/device_dispatch.h"
#include "ops/lm_head_ce.h"
#include "ops/ops.h"
#include "ops/profile.h"

namespace sft::ops {

namespace {

LmHeadWorkspace& workspace() {
  thread_local LmHeadWorkspace ws;
  return ws;
}

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

LmHeadStats lm_head_cross_entropy(View dx, View dw, View logits, View x, View w,
                                  const int64_t* targets, double scale, VocabShard shard) {
  const ScopedOp op("lm_head_cross_entropy");
  require_cpu_kernel("lm_head_cross_entropy", {dx, dw, logits, x, w});
  check(dx, dw, logits, x, w);
  const int64_t T = x.rows, C = x.cols, V = w.rows;
  if (shard.group) {
    // Every rank checks the same things (shapes agree over the group), so they all fail or none.
    if (!logits.empty())
      fail("ops",
           "lm_head_cross_entropy: no logits from a vocabulary shard (hint: compute them from "
           "the gathered whole weights)");
    if (shard.begin < 0 || shard.begin + V > V * shard.group->size())
      fail("ops", "lm_head_cross_entropy: vocabulary rows [" + std::to_string(shard.begin) + ", " +
                      std::to_string(shard.begin + V) + ") are not a slice of a " +
                      std::to_string(shard.group->size()) + "-way split of " +
                      std::to_string(V * shard.group->size()) + " rows");
    if (x.dtype == DType::kBF16)
      return lm_head_cross_entropy_bf16(
          data_or_null<float>(dx), data_or_null<float>(dw), x.as<uint16_t>(), w.as<uint16_t>(),
          targets, static_cast<float>(scale), T, C, V, workspace(), shard.begin, shard.group);
    if (x.dtype == DType::kF64)
      return lm_head_cross_entropy(data_or_null<double>(dx), data_or_null<double>(dw),
                                   static_cast<double*>(nullptr), x.as<double>(), w.as<double>(),
                                   targets, scale, T, C, V, workspace(), shard.begin, shard.group);
    return lm_head_cross_entropy(data_or_null<float>(dx), data_or_null<float>(dw),
                                 static_cast<float*>(nullptr), x.as<float>(), w.as<float>(),
                                 targets, static_cast<float>(scale), T, C, V, workspace(),
                                 shard.begin, shard.group);
  }
  if (x.dtype == DType::kBF16 && logits.empty())
    return lm_head_cross_entropy_bf16(data_or_null<float>(dx), data_or_null<float>(dw),
                                      x.as<uint16_t>(), w.as<uint16_t>(), targets,
                                      static_cast<float>(scale), T, C, V, workspace());
  if (x.dtype == DType::kBF16) {
    // Full logits wanted (debug dumps, decoding, export checks): the bf16 values in fp32.
    thread_local std::vector<float> x32, w32;
    x32.resize(static_cast<size_t>(x.numel()));
    w32.resize(static_cast<size_t>(w.numel()));
    cast(view_of(x32.data(), T, C), x);
    cast(view_of(w32.data(), V, C), w);
    return lm_head_cross_entropy(dx, dw, logits, view_of(x32.data(), T, C),
                                 view_of(w32.data(), V, C), targets, scale);
  }
  if (x.dtype == DType::kF64)
    return lm_head_cross_entropy(data_or_null<double>(dx), data_or_null<double>(dw),
                                 data_or_null<double>(logits), x.as<double>(), w.as<double>(),
                                 targets, scale, T, C, V, workspace());
  return lm_head_cross_entropy(data_or_null<float>(dx), data_or_null<float>(dw),
                               data_or_null<float>(logits), x.as<float>(), w.as<float>(), targets,
                               static_cast<float>(scale), T, C, V, workspace());
}

}  // namespace sft::ops
