// Built when SFT_CUDA is OFF: the CUDA entry points exist and say how to get them. The view-level
// ops route CUDA views here (ops/device_dispatch.h), so such a view fails naming its op; the raw
// memory calls are here for callers that pick a backend at run time (tests/conformance), which
// check cuda_available() first.
#include <string>

#include "core/error.h"
#include "ops/backend.h"
#include "ops/cuda/cuda_memory.h"
#include "ops/cuda/cuda_ops.h"

namespace sft {

bool cuda_available() {
  return false;
}

void cuda_init(int /*device*/) {
  fail("cuda", "sft was built without CUDA; rebuild with -DSFT_CUDA=ON");
}

std::string compiled_backends() {
  return "cpu";
}

namespace ops::cuda {

namespace {
[[noreturn]] void without_cuda(const char* op) {
  fail("ops", std::string(op) +
                  ": a CUDA view, but sft was built without CUDA; rebuild with "
                  "-DSFT_CUDA=ON");
}
}  // namespace

void matmul(View, View, View, bool, bool, bool) {
  without_cuda("matmul");
}
void rmsnorm_forward(View, View, View, View, double) {
  without_cuda("rmsnorm_forward");
}
void rmsnorm_backward(View, View, View, View, View, View) {
  without_cuda("rmsnorm_backward");
}
void rope_forward(View, View, View, int64_t) {
  without_cuda("rope_forward");
}
void rope_backward(View, View, View, int64_t) {
  without_cuda("rope_backward");
}
void swiglu_forward(View, View, View) {
  without_cuda("swiglu_forward");
}
void swiglu_backward(View, View, View, View, View) {
  without_cuda("swiglu_backward");
}
void embedding_forward(View, const int64_t*, View, VocabShard) {
  without_cuda("embedding_forward");
}
void embedding_backward(View, View, const int64_t*, VocabShard) {
  without_cuda("embedding_backward");
}
LmHeadStats lm_head_cross_entropy(View, View, View, View, View, const int64_t*, double, Workspace,
                                  VocabShard, double, const LmHeadTuning&) {
  without_cuda("lm_head_cross_entropy");
}
void add(View, View) {
  without_cuda("add");
}
void add_bias(View, View) {
  without_cuda("add_bias");
}
void bias_backward(View, View) {
  without_cuda("bias_backward");
}
void adamw_update(View, View, View, View, const AdamWScalars&, View) {
  without_cuda("adamw_update");
}
double sum_of_squares(View) {
  without_cuda("sum_of_squares");
}
void scale(View, float) {
  without_cuda("scale");
}
void add_scalar(View, float) {
  without_cuda("add_scalar");
}
void zero(View) {
  without_cuda("zero");
}
void cast(View, View) {
  without_cuda("cast");
}

void* device_alloc(size_t) {
  without_cuda("device_alloc");
}
void device_free(void*) noexcept {}  // nothing was allocated
void copy_to_device(void*, const void*, size_t) {
  without_cuda("copy_to_device");
}
void copy_to_host(void*, const void*, size_t) {
  without_cuda("copy_to_host");
}
void synchronize() {}  // no device, nothing in flight

}  // namespace ops::cuda

}  // namespace sft
