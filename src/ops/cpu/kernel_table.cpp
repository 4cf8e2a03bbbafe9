// The CPU backend's kernel table (ops/kernel_table.h): every slot, the view kernels of
// ops/cpu/cpu_ops.h.
#include "ops/kernel_table.h"
#include "ops/cpu/cpu_ops.h"

namespace sft::ops {

const KernelTable& cpu_kernels() {
  static const KernelTable table{
      .device = "CPU",
      .matmul = cpu::matmul,
      .matmul_4bit = cpu::matmul_4bit,
      .lora_backward_products = cpu::lora_backward_products,
      .rmsnorm_forward = cpu::rmsnorm_forward,
      .rmsnorm_backward = cpu::rmsnorm_backward,
      .add_rmsnorm_forward = cpu::add_rmsnorm_forward,
      .rope_forward = cpu::rope_forward,
      .rope_backward = cpu::rope_backward,
      .swiglu_forward = cpu::swiglu_forward,
      .swiglu_backward = cpu::swiglu_backward,
      .swiglu_clamped_forward = cpu::swiglu_clamped_forward,
      .swiglu_clamped_backward = cpu::swiglu_clamped_backward,
      .gelu_tanh_gated_forward = cpu::gelu_tanh_gated_forward,
      .gelu_tanh_gated_backward = cpu::gelu_tanh_gated_backward,
      .embedding_forward = cpu::embedding_forward,
      .embedding_backward = cpu::embedding_backward,
      .attention_forward = cpu::attention_forward,
      .attention_backward = cpu::attention_backward,
      .attention_sinks_forward = cpu::attention_sinks_forward,
      .attention_sinks_backward = cpu::attention_sinks_backward,
      .lm_head_cross_entropy = cpu::lm_head_cross_entropy,
      .add = cpu::add,
      .add_bias = cpu::add_bias,
      .bias_backward = cpu::bias_backward,
      .adamw_update = cpu::adamw_update,
      .adamw_update_slices = cpu::adamw_update_slices,
      .sum_of_squares = cpu::sum_of_squares,
      .scale = cpu::scale,
      .add_scalar = cpu::add_scalar,
      .add_uniform_noise = cpu::add_uniform_noise,
      .dropout = cpu::dropout,
      .zero = cpu::zero,
      .cast = cpu::cast,
      .moe_router_forward = cpu::moe_router_forward,
      .moe_router_backward = cpu::moe_router_backward,
      .moe_permute_forward = cpu::moe_permute_forward,
      .moe_permute_backward = cpu::moe_permute_backward,
      .grouped_matmul = cpu::grouped_matmul,
      .grouped_matmul_weight_grad = cpu::grouped_matmul_weight_grad,
      .moe_combine_forward = cpu::moe_combine_forward,
      .moe_combine_backward = cpu::moe_combine_backward,
      .moe_router_load = cpu::moe_router_load,
  };
  return table;
}

}  // namespace sft::ops
