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
      .lora_backward_products = cuda::lora_backward_products,
      .rmsnorm_forward = cuda::rmsnorm_forward,
      .rmsnorm_backward = cuda::rmsnorm_backward,
      .add_rmsnorm_forward = cuda::add_rmsnorm_forward,
      .rope_forward = cuda::rope_forward,
      .rope_backward = cuda::rope_backward,
      .swiglu_forward = cuda::swiglu_forward,
      .swiglu_backward = cuda::swiglu_backward,
      .swiglu_clamped_forward = cuda::swiglu_clamped_forward,
      .swiglu_clamped_backward = cuda::swiglu_clamped_backward,
      .gelu_tanh_gated_forward = cuda::gelu_tanh_gated_forward,
      .gelu_tanh_gated_backward = cuda::gelu_tanh_gated_backward,
      .embedding_forward = cuda::embedding_forward,
      .embedding_backward = cuda::embedding_backward,
      .attention_forward = cuda::attention_forward,
      .attention_backward = cuda::attention_backward,
      .attention_sinks_forward = cuda::attention_sinks_forward,
      .attention_sinks_backward = cuda::attention_sinks_backward,
      // The kernel's trailing tuning argument (tests, benchmarks) left at its defaults.
      .lm_head_cross_entropy =
          [](View dx, View dw, View logits, View x, View w, const int64_t* targets, double scale,
             Workspace workspace, VocabShard shard, double softcap) {
            return cuda::lm_head_cross_entropy(dx, dw, logits, x, w, targets, scale, workspace,
                                               shard, softcap);
          },
      .add = cuda::add,
      .add_bias = cuda::add_bias,
      .bias_backward = cuda::bias_backward,
      .adamw_update = cuda::adamw_update,
      .adamw_update_slices = cuda::adamw_update_slices,
      .sum_of_squares = cuda::sum_of_squares,
      .scale = cuda::scale,
      .add_scalar = cuda::add_scalar,
      .add_uniform_noise = cuda::add_uniform_noise,
      .dropout = cuda::dropout,
      .zero = cuda::zero,
      .cast = cuda::cast,
      .moe_router_forward = cuda::moe_router_forward,
      .moe_router_backward = cuda::moe_router_backward,
      .moe_permute_forward = cuda::moe_permute_forward,
      .moe_permute_backward = cuda::moe_permute_backward,
      .grouped_matmul = cuda::grouped_matmul,
      .grouped_matmul_weight_grad = cuda::grouped_matmul_weight_grad,
      .moe_combine_forward = cuda::moe_combine_forward,
      .moe_combine_backward = cuda::moe_combine_backward,
      .moe_router_load = cuda::moe_router_load,
  };
  return table;
}

}  // namespace sft::ops
