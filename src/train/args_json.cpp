// training_args_json: see args_json.h.
#include "train/args_json.h"

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
  return j;
}

}  // namespace sft
