// The CUDA backend's kernel table (ops/kernel_table.h): the slots with a CUDA kernel
// (ops/cuda/cuda_ops.h). An empty slot fails naming the op on CUDA views (docs/cuda.md lists
// what is here and what is not).
#include "ops/kernel_table.h"
#include "ops/cuda/cuda_ops.h"

namespace sft::ops {

const KernelTable& cuda_kernels() {
  static const KernelTable table{
      .device = "CUDA",
      .matmul = cuda::matmul,
      .rmsnorm_forward = cuda::rmsnorm_forward,
      .rmsnorm_backward = cuda::rmsnorm_backward,
      .add_rmsnorm_forward = cuda::add_rmsnorm_forward,
      .rope_forward = cuda::rope_forward,
      .rope_backward = cuda::rope_backward,
      .swiglu_forward = cuda::swiglu_forward,
      .swiglu_backward = cuda::swiglu_backward,
      .embedding_forward = cuda::embedding_forward,
      .embedding_backward = cuda::embedding_backward,
      .attention_forward = cuda::attention_forward,
      .attention_backward = cuda::attention_backward,
      .attention_sinks_forward = cuda::attention_sinks_forward,
      .attention_sinks_backward = cuda::attention_sinks_backward,
      .add = cuda::add,
      .add_bias = cuda::add_bias,
      .bias_backward = cuda::bias_backward,
      .adamw_update = cuda::adamw_update,
      .sum_of_squares = cuda::sum_of_squares,
      .scale = cuda::scale,
      .add_scalar = cuda::add_scalar,
      .zero = cuda::zero,
      .cast = cuda::cast,
  };
  return table;
}

}  // namespace sft::ops
