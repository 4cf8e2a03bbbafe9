// training_args_json: see args_json.h.
#include "train/args_json.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "io/options.h"

namespace sft {

Json training_args_json(const TrainingArgs& a) {
  TrainingArgs copy = a;  // the option set binds to fields it may write; read a copy
  const OptionSet options = training_options(copy);
  Json j = Json::object();
  for (const Option& option : options.options()) j[option.name] = option.value();
  // Where TrainingArguments.to_dict() differs from the typed value: report_to stays a list
  // when empty, and lr_scheduler_kwargs defaults to {}.
  if (a.report_to.empty()) j["report_to"] = Json::array();
  if (a.lr_scheduler_kwargs.is_null()) j["lr_scheduler_kwargs"] = Json::object();
  // debug is a string on the command line that __post_init__ splits into a list of DebugOption
  // values: "" is [].
  Json& debug = j["debug"];
  if (debug.is_string()) {
    Json words = Json::array();
    const std::string text = debug.get<std::string>();
    for (size_t at = 0; at < text.size();) {
      const size_t start = text.find_first_not_of(' ', at);
      if (start == std::string::npos) break;
      const size_t end = std::min(text.find(' ', start), text.size());
      words.push_back(text.substr(start, end - start));
      at = end;
    }
    debug = words;
  }
  // to_dict() masks every field named *_token as "<NAME>" (hub_token, and SFTConfig's
  // eos_token and pad_token), so a Hub token never reaches W&B or TensorBoard.
  for (auto& [name, value] : j.items())
    if (name.size() > 6 && name.ends_with("_token")) {
      std::string masked = "<" + name + ">";
      std::transform(masked.begin(), masked.end(), masked.begin(),
                     [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
      value = masked;
    }
  return j;
}

}  // namespace sft
