// Moving parameters between their whole form (files, checkpoints, export) and a rank's
// tensor-parallel slice (ParamSpec::tp_dim / tp_begin / full_shape, tensor_parallel.h).
// A tensor is 1-D or 2-D; a slice is the rank's block of equal blocks along tp_dim, so along
// dim 0 it is one contiguous run and along dim 1 one run per row. A block that reaches past
// the whole tensor (the padded vocabulary split, tensor_parallel.h) holds zeros there: they
// are written zero on the way in and left out on the way out.
#pragma once

#include "core/shard_group.h"
#include "io/safetensors.h"
#include "model/param_layout.h"
#include "model/parameters.h"

namespace sft::model {

// local (spec.shape) = this rank's block of full (spec.full_shape); a copy when unsplit.
void copy_block(const ParamSpec& spec, const float* full, float* local);

// full (spec.full_shape) = every rank's block (each rank passes its own local). A collective:
// every rank of `group` calls it for the same spec, in the same order. Unsplit: a copy.
void gather_blocks(const ParamSpec& spec, const float* local, float* full, ShardGroup& group);

// The block of a stored whole tensor (full_shape) that is this rank's slice (spec.shape)
// without its padding; the whole tensor when unsplit. A spec without full_shape (e.g. a LoRA
// adapter's) is whole.
TensorBlock block_of(const ParamSpec& spec);

// local (spec.shape, f32) = this rank's block of the stored tensor `entry` of `file`, read
// straight from the mapping (io/safetensors.h's read_tensor_block), padding zero. The caller
// has checked entry.shape against the whole shape.
void read_block(const SafetensorsFile& file, const TensorEntry& entry, const ParamSpec& spec,
                float* local);

// Every parameter's value from the checkpoint (shapes already checked against full_shape by
// the caller), as this rank's slice: each rank reads only its slices' bytes of the files, and of
// those only the part of the arena the set holds (ParameterSet::hold_only, model/held_values.h).
void load_parameter_slices(const SafetensorsCheckpoint& ckpt, ParameterSet& params);

}  // namespace sft::model
