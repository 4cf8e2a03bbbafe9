#include "model/model_dir.h"

#include <filesystem>
#include <set>

#include "io/hf_hub.h"
#include "model/quant4_weight.h"

namespace sft {

namespace fs = std::filesystem;

ModelDir open_model_dir(const std::string& name_or_path, const std::string& revision) {
  ModelDir dir;
  dir.name_or_path = name_or_path;
  dir.path = resolve_hub_folder(name_or_path, HubRepoType::kModel, revision);
  const fs::path config = fs::path(dir.path) / "config.json";
  if (!fs::is_regular_file(config)) {
    fail_in_file("model", {dir.path, ""}, "no config.json in this folder",
                 "a model folder is what save_pretrained writes: config.json plus *.safetensors");
  }
  dir.config = load_model_config(config.string());
  return dir;
}

std::vector<std::string> present_tokenizer_files(const std::string& dir) {
  static const char* const kNames[] = {"tokenizer.json",
                                       "tokenizer_config.json",
                                       "special_tokens_map.json",
                                       "chat_template.jinja",
                                       "chat_template.json",
                                       "tokenizer.model",
                                       "vocab.json",
                                       "merges.txt"};
  std::vector<std::string> out;
  for (const char* name : kNames) {
    if (fs::is_regular_file(fs::path(dir) / name)) out.emplace_back(name);
  }
  return out;
}

LayoutMismatch compare_with_layout(const SafetensorsCheckpoint& checkpoint,
                                   const std::vector<ParamSpec>& layout) {
  LayoutMismatch result;
  std::set<std::string> expected;
  for (const ParamSpec& p : layout) {
    expected.insert(p.name);
    if (!checkpoint.contains(p.name)) {
      result.missing.push_back(p.name);
      continue;
    }
    // A bitsandbytes 4-bit weight stores packed bytes; its quant_state holds the shape.
    const SafetensorsFile& file = checkpoint.file_of(p.name);
    const Shape actual = model::is_quant4_weight(file, p.name)
                             ? model::read_quant4_state(file, p.name).shape
                             : checkpoint.entry(p.name).shape;
    if (actual != p.shape) {
      result.wrong_shape.push_back(p.name + ": checkpoint " + shape_to_string(actual) +
                                   ", config implies " + shape_to_string(p.shape));
    }
  }
  for (const std::string& name : checkpoint.names()) {
    if (!expected.count(name) && name != "lm_head.weight" &&
        !(model::is_quant4_piece(name) &&
          expected.count(name.substr(0, name.find(".weight.") + 7))))
      result.unexpected.push_back(name);
    if (name == "lm_head.weight" && !expected.count(name) &&
        checkpoint.entry(name).shape != layout.front().shape) {
      result.wrong_shape.push_back(name + ": tied to the embeddings but stored with shape " +
                                   shape_to_string(checkpoint.entry(name).shape));
    }
  }
  return result;
}

std::string describe_mismatch(const LayoutMismatch& mismatch, size_t max_lines) {
  std::string out;
  size_t shown = 0, total = 0;
  auto add = [&](const char* what, const std::vector<std::string>& names) {
    for (const std::string& name : names) {
      ++total;
      if (shown >= max_lines) continue;
      out += std::string("\n  ") + what + " " + name;
      ++shown;
    }
  };
  add("missing", mismatch.missing);
  add("unexpected", mismatch.unexpected);
  add("wrong shape", mismatch.wrong_shape);
  if (total > shown) out += "\n  ... and " + std::to_string(total - shown) + " more";
  return out;
}

}  // namespace sft
