// The files of checkpoint-<step>/ beyond the HF model (which export.h writes), so that a
// resumed run continues bit for bit:
//
//   optimizer.safetensors   exp_avg and exp_avg_sq (fp32, flat in the model's parameter
//                           order, one tensor per parameter under its HF name) + the step
//   training_state.json     scheduler config and step, data-loader cursor, RNG seed and
//                           the run's settings that must not change on resume
//   trainer_state.json      as transformers writes it (trainer_state.h)
//
// The model weights saved in F32 are the master weights. No pickle anywhere. The files are
// written into the folder checkpoint_dir.h's save_checkpoint hands over (which makes the
// whole checkpoint atomic); reading checks every tensor's name, shape and dtype and names
// the file and tensor when something does not fit.
#pragma once

#include <string>

#include "io/json.h"
#include "model/transformer.h"
#include "optim/adamw.h"
#include "train/export.h"
#include "train/trainer_state.h"

namespace sft {

struct TrainingSnapshot {
  model::Transformer* model = nullptr;
  AdamW* optimizer = nullptr;
  TrainerState* trainer_state = nullptr;
  Json training_state = Json::object();  // scheduler, loader cursor, seed, ... (trainer's choice)
};

// Writes model (export_hf_model with dtype F32), optimizer, training_state.json and
// trainer_state.json into `folder`.
void write_training_checkpoint(const std::string& folder, const TrainingSnapshot& snapshot,
                               const ExportOptions& export_options);

// Restores weights, optimizer moments and step, trainer state and training_state from
// `folder` into the snapshot's objects (which must have the checkpoint's shapes).
void read_training_checkpoint(const std::string& folder, TrainingSnapshot& snapshot);

}  // namespace sft
