// The experts' tensors between sft's stacked form and the form on disk.
//
// sft holds a mixture-of-experts layer's experts as transformers 5 holds them in memory:
// <moe_module>.experts.gate_up_proj (E, 2I, C) and .down_proj (E, C, I), the router
// <moe_module>.<router_module>.weight (param_layout.h), so a grouped GEMM reads expert e's block
// as rows of one matrix. save_pretrained writes the family's own form (config.h's
// ExpertsOnDisk, transformers' conversion_mapping undone): per expert, as Qwen3-MoE's and
// OLMoE's mlp.experts.<e>.{gate,up,down}_proj.weight or Mixtral's
// block_sparse_moe.experts.<e>.{w1,w3,w2}.weight (router block_sparse_moe.gate.weight), or stacked
// under other names, as GraniteMoe's block_sparse_moe.input_linear.weight / output_linear.weight
// (router block_sparse_moe.router.layer.weight), or transposed and interleaved, as gpt-oss's
// mlp.experts.gate_up_proj (E, C, 2I: gate and up in alternating columns), down_proj (E, I, C)
// and gate_up_proj_bias (E, 2I, alternating the same way). These functions do the same
// conversion here: a
// checkpoint is seen under sft's names (experts_view), a stacked tensor is read from its
// per-expert tensors (or from the stacked name, when a checkpoint has that), and written back in
// the family's form as borrowed row blocks of the stack (no copy: each expert's matrix is a
// contiguous run of it), or, transposed and interleaved, as owned copies in the form on disk.
// gpt-oss's released checkpoints (config.experts_mxfp4) store each stack as an MXFP4 pair,
// <stack>_blocks and <stack>_scales (mxfp4.h), decoded here at load; what sft writes back is the
// plain bf16/fp32 form above, as transformers saves a model it loaded with
// Mxfp4Config(dequantize=True) (and config.json loses its quantization_config: export_json).
#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"
#include "io/safetensors.h"
#include "model/config.h"
#include "model/param_layout.h"
#include "model/parameters.h"

namespace sft::model {

// `ckpt` with the family's stored expert and router names listed under the names
// checkpoint_layout reads (Mixtral's experts.<e>.w1 as experts.<e>.gate_proj under mlp, its
// block_sparse_moe.gate as mlp.gate, GraniteMoe's input_linear as experts.gate_up_proj, ...);
// names already in that form, and every other tensor, as they are. An MXFP4 checkpoint's pairs
// are checked here (both halves, uint8, agreeing shapes), before anything reads them.
SafetensorsCheckpoint experts_view(SafetensorsCheckpoint ckpt, const ModelConfig& config);
// A name experts_view lists (or checkpoint_layout expects) as the family stores it on disk, for
// messages about a tensor the checkpoint lacks (Mixtral's experts.<e>.w1, ...).
std::string name_on_disk(const std::string& name, const ModelConfig& config);

// The layout as `ckpt` (seen through experts_view) stores it: each stacked expert tensor replaced
// by its experts' tensors, unless the checkpoint holds the stacked name itself (then the spec
// stays). Without experts, the layout unchanged.
// A transposed family's stacks (config.experts_on_disk) are listed in their shapes on disk; an
// MXFP4 checkpoint's stacks that it does not hold under their plain names as their _blocks and
// _scales, in the shapes config.json implies.
std::vector<ParamSpec> checkpoint_layout(const std::vector<ParamSpec>& layout,
                                         const SafetensorsCheckpoint& ckpt,
                                         const ModelConfig& config);

// Every parameter's value from the checkpoint (names and shapes checked against
// checkpoint_layout by the caller), the stacked experts from their per-expert tensors, or
// decoded from their MXFP4 pairs (refusing a block that decodes to inf).
void load_checkpoint_parameters(const SafetensorsCheckpoint& ckpt, ParameterSet& params,
                                const ModelConfig& config);

// The named values as save_pretrained writes them for `config`'s family: the experts in its form
// on disk (borrowed views of `params`, valid while it lives, or owned copies for a transposed
// family), everything else as named_values().
std::vector<NamedTensor> checkpoint_tensors(const ParameterSet& params, const ModelConfig& config);

// Whether `spec`'s tensor is stored in another arrangement than sft's for `config` (gpt-oss's
// transposed, interleaved experts): then checkpoint_tensors' entry for it is a converted copy,
// which on_disk_form makes from the parameter's whole values (a ZeRO-3 export gathers them first).
bool converted_on_disk(const ParamSpec& spec, const ModelConfig& config);
// For each of checkpoint_tensors' entries, in order, the parameter it is converted from, or null.
std::vector<const Parameter*> converted_sources(const ParameterSet& params,
                                                const ModelConfig& config);
Tensor on_disk_form(const ParamSpec& spec, const float* values);

}  // namespace sft::model
