// The files of checkpoint-<step>/ beyond the HF model (which export.h writes), so that a
// resumed run continues bit for bit:
//
//   optimizer.safetensors   "exp_avg.<name>" and "exp_avg_sq.<name>" (F32, the parameter's
//                           shape) for every parameter under sft's name (the HF name, but a
//                           mixture of experts' stacks as sft holds them, model/param_layout.h,
//                           not per expert as the model file); __metadata__ holds
//                           format "sft-adamw", version "1", step (AdamW::steps_taken) and,
//                           for information, beta1/beta2/eps/weight_decay
//   training_state.json     scheduler config and step, data-loader cursor, RNG seed and
//                           the run's settings that must not change on resume
//   trainer_state.json      as transformers writes it (trainer_state.h)
//
// The model weights saved in F32 are the master weights, in the family's form on disk (a mixture
// of experts' as model/moe_checkpoint.h converts them), and read back through the same
// conversion as a model folder at load. No pickle anywhere. The files are
// written into the folder checkpoint_dir.h's save_checkpoint hands over (which makes the
// whole checkpoint atomic); reading checks every tensor's name, shape and dtype and names
// the file and tensor when something does not fit; everything is checked before anything
// is restored, so a bad checkpoint leaves the snapshot's objects as they were.
//
// ZeRO (a ZeroTensorStream): the sharded moments and weights are gathered one tensor at a time as
// the files are written, never the whole model or moments on one rank; reading takes the whole
// moments' own part only (moment_shard: any world size wrote them).
//
// Tensor parallelism: the files always hold whole tensors, exactly as a tp = 1 run writes
// them, so a checkpoint resumes with any tp size. Writing takes a whole model and optimizer
// (train/tp_gather.h assembles them from the slices on group rank 0; a slice model is
// refused). Reading into a slice model checks each stored tensor against the whole shape
// (ParamSpec::full_shape) and reads only the rank's block of it, weights and moments alike.
#pragma once

#include <optional>
#include <string>

#include "io/json.h"
#include "model/transformer.h"
#include "optim/adamw.h"
#include "optim/zero_stream.h"
#include "train/export.h"
#include "train/trainer_state.h"

namespace sft {

// optimizer / trainer_state may be null: their file is then neither written nor read.
struct TrainingSnapshot {
  model::Transformer* model = nullptr;  // required; its AdamW moments follow parameters() order
  AdamW* optimizer = nullptr;
  TrainerState* trainer_state = nullptr;
  Json training_state = Json::object();  // scheduler, loader cursor, seed, ... (trainer's choice)
};

// Writes model (export_hf_model with dtype F32, the other options as given), optimizer,
// training_state.json (json.dump(2)) and trainer_state.json into `folder`, each atomically.
// Under ZeRO, on the writing rank while the other data-parallel ranks serve `stream`
// (optim/zero_stream.h): the moments (snapshot.optimizer null) and the trainable weights inside
// the layers (ZeRO-3) come from it a tensor at a time; the files are the same.
void write_training_checkpoint(const std::string& folder, const TrainingSnapshot& snapshot,
                               const ExportOptions& export_options,
                               ZeroTensorStream* stream = nullptr);

// The WholeTensor (train/export.h) of a model whose trainable weights come from `stream`
// (ZeRO-3); tensors outside the trainable arena are read where they are.
WholeTensor whole_from_stream(model::Transformer& model, ZeroTensorStream& stream);

// Restores weights, optimizer moments and step, trainer state and training_state from
// `folder` into the snapshot's objects (which must have the checkpoint's shapes, or be a
// rank's slices of them; the moments then follow the slice model's trainable() order).
// moment_shard (ZeRO): snapshot.optimizer holds the moments of this range of the flat
// trainable arena only (Zero1's shard); each rank reads its part of every stored moment,
// whatever world size wrote them.
void read_training_checkpoint(const std::string& folder, TrainingSnapshot& snapshot,
                              std::optional<ShardRange> moment_shard = std::nullopt);

}  // namespace sft
