// TensorBoard's "args" and "model_config" texts (see tensorboard_args.h).
#include "train/tensorboard_args.h"

#include <filesystem>

#include "io/options.h"
#include "train/args.h"
#include "train/export_json.h"

namespace sft {

namespace {

// An option's shown value (OptionSet's --help text) as JSON.
Json option_value(const Option& option) {
  const std::string text = option.show();
  if (option.optional && text == "None") return nullptr;
  switch (option.type) {
    case OptionType::kBool:
      return text == "true";
    case OptionType::kInt:
      return std::stoll(text);
    case OptionType::kFloat:
      return std::stod(text);
    case OptionType::kString:
      return text == "\"\"" ? std::string() : text;
    case OptionType::kStringList: {
      Json list = Json::array();
      for (size_t start = 0; start <= text.size();) {
        const size_t comma = std::min(text.find(',', start), text.size());
        list.push_back(text.substr(start, comma - start));
        start = comma + 1;
      }
      return list;
    }
    case OptionType::kJson:
      return Json::parse(text);
  }
  return text;
}

}  // namespace

Json training_args_json(const TrainingArgs& args) {
  TrainingArgs copy = args;  // the option set binds to fields it may write; read a copy
  const OptionSet options = training_options(copy);
  Json out = Json::object();
  for (const Option& option : options.options()) out[option.name] = option_value(option);
  return out;
}

std::string model_config_text(const std::string& source_model_dir, const ModelConfig& config) {
  const std::filesystem::path path = std::filesystem::path(source_model_dir) / "config.json";
  const Json json = !source_model_dir.empty() && std::filesystem::exists(path)
                        ? read_json_file(path.string(), "tensorboard")
                        : export_json::model_config_to_json(config);
  return export_json::dump_like_python(json, true);
}

}  // namespace sft
