// output_dir/README.md: the model card TRL 1.16's SFTTrainer writes (trl/templates/
// lm_model_card.md rendered by huggingface_hub's ModelCard), with sft.cpp's values where
// TRL's would not be true of this run:
//
//   front matter  base_model (a Hub id only), datasets (a Hub id only), library_name
//                 transformers, model_name, tags [generated_from_trainer, sft, sft.cpp]
//                 (TRL's "trl" tag names the library that trained it, so it becomes sft.cpp),
//                 licence: license (as TRL writes it)
//   sections      the title, the fine-tuned-from sentence, Quick start (the pipeline snippet,
//                 loading --hub_model_id or else the output folder), Training procedure
//                 (plus transformers' "Training hyperparameters" list), Framework versions
//                 (sft.cpp's, and the TRL / Transformers releases it follows), Citations
//                 (TRL's BibTeX: the method sft.cpp reimplements)
//
// A local base model or dataset is named by its folder instead of a Hub link (TRL writes
// "[None](https://huggingface.co/None)" there). tests/fixtures/model_card/ holds TRL's own
// cards for comparison (tools/make_wandb_goldens.py).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "train/args.h"

namespace sft {

struct ModelCardInfo {
  std::string model_name;                 // the output folder's name (or the Hub repo's)
  std::optional<std::string> base_model;  // a Hub id
  std::string local_base_model;           // else the local folder it came from
  std::optional<std::string> dataset;     // a Hub id
  std::string local_dataset;              // else the local path
  std::string pipeline_model;             // what the Quick start loads
  std::vector<std::pair<std::string, std::string>> hyperparameters;  // name, value
};

// From a run's flags: a name that is no existing local path is a Hub id. `world_size` is the
// number of processes (total batch sizes).
ModelCardInfo model_card_info(const TrainingArgs& args, int world_size,
                              const std::optional<std::string>& hub_model_id = std::nullopt);

std::string render_model_card(const ModelCardInfo& info);

// Writes output_dir/README.md atomically.
void write_model_card(const std::string& output_dir, const ModelCardInfo& info);

}  // namespace sft
