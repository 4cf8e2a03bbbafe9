// TensorBoard's "args" and "model_config" texts (see tensorboard_args.h).
#include "train/tensorboard_args.h"

#include <filesystem>

#include "train/export_json.h"

namespace sft {

std::string model_config_text(const std::string& source_model_dir, const ModelConfig& config) {
  const std::filesystem::path path = std::filesystem::path(source_model_dir) / "config.json";
  const Json json = !source_model_dir.empty() && std::filesystem::exists(path)
                        ? read_json_file(path.string(), "tensorboard")
                        : model_config_to_json(config);
  return export_json::dump_like_python(json, true);
}

}  // namespace sft
