// An HF model folder: where it is, its config, its weights, and which tokenizer files it has.
#pragma once

#include <string>
#include <vector>

#include "io/safetensors.h"
#include "model/config.h"
#include "model/param_layout.h"

namespace sft {

struct ModelDir {
  std::string name_or_path;  // as the user gave it
  std::string path;          // the resolved folder
  ModelConfig config;
};

// Resolves a folder or Hub id (see io/hf_hub.h) and reads its config.json.
ModelDir open_model_dir(const std::string& name_or_path, const std::string& revision = "main");

// Which of the tokenizer-related files HF writes are present in `dir`.
std::vector<std::string> present_tokenizer_files(const std::string& dir);

// Differences between what the config implies and what the checkpoint holds.
struct LayoutMismatch {
  std::vector<std::string> missing;      // in the layout, not in the checkpoint
  std::vector<std::string> unexpected;   // in the checkpoint, not in the layout
  std::vector<std::string> wrong_shape;  // "name: checkpoint [a, b], config implies [c, d]"
  bool ok() const { return missing.empty() && unexpected.empty() && wrong_shape.empty(); }
};
// A tied checkpoint that still stores lm_head.weight is accepted (transformers ignores it).
LayoutMismatch compare_with_layout(const SafetensorsCheckpoint& checkpoint,
                                   const std::vector<ParamSpec>& layout);
// One tensor per line ("\n  missing model.norm.weight"), at most `max_lines`, then
// "\n  ... and N more": readable when a whole family of tensors is off.
std::string describe_mismatch(const LayoutMismatch& mismatch, size_t max_lines = 10);

}  // namespace sft
