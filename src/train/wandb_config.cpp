#include "train/wandb_config.h"

#include <filesystem>

#include "train/args_json.h"

namespace sft {

Json wandb_model_config(const std::string& source_model_dir, const ModelConfig& config) {
  const std::filesystem::path file = std::filesystem::path(source_model_dir) / "config.json";
  if (!source_model_dir.empty() && std::filesystem::is_regular_file(file))
    return read_json_file(file.string(), "wandb");
  return model_config_to_json(config);
}

Json wandb_run_config(const Json& model_config, const TrainingArgs& args) {
  Json config = model_config.is_object() ? model_config : Json::object();
  const Json training = training_args_json(args);  // a named value: items() refers into it
  for (const auto& [k, v] : training.items()) config[k] = v;
  return config;
}

}  // namespace sft
