// Per-op time of the view-level ops, for the "where does the step go" breakdown.
// Off unless SFT_PROFILE=1 is in the environment (then each op costs two clock reads);
// SFT_PROFILE=cpu times the calling thread's CPU time instead (with SFT_NUM_THREADS=1: each op's
// work, robust to other processes on a shared machine). An op
// called inside another (the LM head's matmuls) counts toward the outer one only, so the
// table adds up to the time spent in ops. Matmuls are listed per shape and dtype.
// Not thread-safe: the view-level ops are called from one thread (kernels fan out inside).
// SFT_PROFILE_SKIP=N leaves out the first N forward passes (micro-batches): the table starts
// when the (N+1)-th embedding lookup, the first op of a forward pass, does. So one run of
// 1 + n steps gives the steady steps alone, without the first step's one-off costs (first touch
// of the gradients and optimizer state, oneDNN's kernel compiles).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sft::ops {

bool profiling();

class ScopedOp {
 public:
  explicit ScopedOp(const char* name) : ScopedOp(name, nullptr) {}
  // `detail` (e.g. a matmul's shape) is built only when profiling.
  ScopedOp(const char* name, std::string (*detail)(const void*), const void* ctx = nullptr);
  ~ScopedOp();
  ScopedOp(const ScopedOp&) = delete;
  ScopedOp& operator=(const ScopedOp&) = delete;

 private:
  const char* name_;
  std::string (*detail_)(const void*);
  const void* ctx_;
  double start_ = -1;
};

// One row of the profile: the op (a matmul with its dtype and shape, as the table prints it).
struct OpTime {
  std::string op;
  int64_t calls = 0;
  double seconds = 0;
};
// The rows so far, by time (the largest first); empty when off.
std::vector<OpTime> op_profile();
// The table so far: op, calls, total seconds, share, sorted by time; empty when off.
std::string op_profile_table();
void reset_op_profile();

}  // namespace sft::ops
