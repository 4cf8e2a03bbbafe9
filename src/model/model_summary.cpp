#include "model/model_summary.h"

#include <algorithm>
#include <filesystem>

#include "model/moe_checkpoint.h"
#include "model/text_model_names.h"

namespace sft {

FullFinetuneMemory full_finetune_memory(int64_t parameters, bool bf16) {
  const auto p = static_cast<uint64_t>(parameters);
  FullFinetuneMemory m;
  m.parameters = parameters;
  m.compute_weights = bf16 ? 2 * p : 0;
  m.master_weights = 4 * p;
  m.gradients = 4 * p;
  m.adam_moments = 8 * p;
  return m;
}

ModelSummary summarize_model(const std::string& name_or_path) {
  ModelSummary s;
  s.dir = open_model_dir(name_or_path);
  s.layout = parameter_layout(s.dir.config);
  s.counts = count_parameters(s.layout);
  SafetensorsCheckpoint checkpoint = SafetensorsCheckpoint::open_dir(s.dir.path);
  for (const SafetensorsFile& f : checkpoint.files()) {
    s.weight_files.push_back(std::filesystem::path(f.path()).filename().string());
    for (const TensorEntry& e : f.entries()) {
      DiskDTypeStats& stats = s.on_disk[std::string(dtype_name(e.dtype))];
      const int64_t n = shape_numel(e.shape);
      stats.tensors += 1;
      stats.elements += n;
      stats.bytes += e.end - e.begin;
      s.stored_elements += n;
    }
  }
  std::sort(s.weight_files.begin(), s.weight_files.end());
  // A multimodal folder: the text model under its own names (the other parts are not sft's);
  // experts stored per expert on disk and stacked in sft (moe_checkpoint.h).
  const model::TextModelNames names = model::text_model_names(checkpoint);
  s.other_parts = model::other_parts(checkpoint, names);
  for (const std::string& name : s.other_parts)
    s.other_parts_elements += shape_numel(checkpoint.entry(name).shape);
  const SafetensorsCheckpoint text =
      model::experts_view(model::text_model_view(std::move(checkpoint), names), s.dir.config);
  s.mismatch = compare_with_layout(text, model::checkpoint_layout(s.layout, text, s.dir.config));
  s.tokenizer_files = present_tokenizer_files(s.dir.path);
  return s;
}

}  // namespace sft
