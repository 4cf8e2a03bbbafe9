// The experts' tensors between sft's stacked form and the form on disk.
//
// sft holds a mixture-of-experts layer's experts as transformers 5 holds them in memory:
// mlp.experts.gate_up_proj (E, 2I, C) and mlp.experts.down_proj (E, C, I) (param_layout.h),
// so a grouped GEMM reads expert e's block as rows of one matrix. save_pretrained writes them
// per expert, as the Hub's checkpoints are: mlp.experts.<e>.gate_proj.weight (I, C),
// .up_proj.weight (I, C) and .down_proj.weight (C, I); transformers converts between the two
// when it loads and saves. These functions do the same conversion here: a stacked tensor is
// read from its per-expert tensors (or from the stacked name, when a checkpoint has that), and
// written back per expert as borrowed row blocks of the stack (no copy: each expert's matrix is
// a contiguous run of it).
#pragma once

#include <vector>

#include "core/tensor.h"
#include "io/safetensors.h"
#include "model/param_layout.h"
#include "model/parameters.h"

namespace sft::model {

// The layout as `ckpt` stores it: each stacked expert tensor replaced by its experts' tensors,
// unless the checkpoint holds the stacked name itself (then the spec stays). Without experts,
// the layout unchanged.
std::vector<ParamSpec> checkpoint_layout(const std::vector<ParamSpec>& layout,
                                         const SafetensorsCheckpoint& ckpt);

// Every parameter's value from the checkpoint (names and shapes checked against
// checkpoint_layout by the caller), the stacked experts from their per-expert tensors.
void load_checkpoint_parameters(const SafetensorsCheckpoint& ckpt, ParameterSet& params);

// The named values as save_pretrained writes them: the stacked experts as per-expert tensors
// (borrowed views of `params`, valid while it lives), everything else as named_values().
std::vector<NamedTensor> checkpoint_tensors(const ParameterSet& params);

}  // namespace sft::model
