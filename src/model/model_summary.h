// What `sft inspect` reports about a model folder, computed without loading tensor data.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/model_dir.h"

namespace sft {

struct DiskDTypeStats {
  int64_t tensors = 0;
  int64_t elements = 0;
  uint64_t bytes = 0;
};

// Memory for a full fine-tune with AdamW, per parameter P (activations excluded: they
// depend on tokens per micro-batch and on gradient checkpointing).
struct FullFinetuneMemory {
  int64_t parameters = 0;
  uint64_t compute_weights = 0;  // bf16 copy used by matmuls: 2 B × P (0 in fp32 training)
  uint64_t master_weights = 0;   // fp32: 4 B × P
  uint64_t gradients = 0;        // fp32: 4 B × P
  uint64_t adam_moments = 0;     // fp32 exp_avg + exp_avg_sq: 8 B × P
  uint64_t total() const { return compute_weights + master_weights + gradients + adam_moments; }
};
FullFinetuneMemory full_finetune_memory(int64_t parameters, bool bf16);

struct ModelSummary {
  ModelDir dir;
  std::vector<ParamSpec> layout;
  ParamCounts counts;
  std::vector<std::string> weight_files;          // file names relative to dir.path
  std::map<std::string, DiskDTypeStats> on_disk;  // by safetensors dtype name
  int64_t stored_elements = 0;                    // every tensor in the checkpoint
  std::vector<std::string> other_parts;  // a multimodal folder's tensors beside the text model
  int64_t other_parts_elements = 0;
  LayoutMismatch mismatch;
  std::vector<std::string> tokenizer_files;
};

ModelSummary summarize_model(const std::string& name_or_path);

}  // namespace sft
