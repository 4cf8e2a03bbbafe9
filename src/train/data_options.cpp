// TrainingArgs → PrepareOptions (see data_options.h).
#include "train/data_options.h"

#include <cstdlib>

#include "core/error.h"
#include "core/log.h"

namespace sft {

std::string default_token_cache_dir() {
  if (const char* dir = std::getenv("SFT_CACHE_DIR"); dir && *dir) return dir;
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.cache/sft/tokens";
}

data::PrepareOptions prepare_options_from_args(const TrainingArgs& a,
                                               const std::string& tokenizer_path,
                                               const std::string& cache_dir) {
  data::PrepareOptions o;
  o.source = {a.dataset_name, a.dataset_config.value_or(""), "main"};
  o.split = a.dataset_train_split;
  if (!a.datasets.is_null()) o.mixture = data::parse_mixture(a.datasets);
  o.format.text_field = a.dataset_text_field;
  std::string columns;
  for (const auto& c : a.dataset_columns) columns += (columns.empty() ? "" : ",") + c;
  if (!columns.empty()) o.format.columns = data::parse_column_mapping(columns);
  o.skip_invalid_rows = a.skip_invalid_rows;
  o.tokenizer_path = tokenizer_path;
  o.chat_template_path = a.chat_template_path;
  o.encode.completion_only_loss = a.completion_only_loss;
  o.encode.assistant_only_loss = a.assistant_only_loss;
  o.encode.eos_token = a.eos_token;
  o.max_length = a.max_length;
  o.truncation_mode = a.truncation_mode;
  o.packing = a.packing;
  o.pack.strategy = data::parse_packing_strategy(a.packing_strategy);
  // TRL maps (and so packs) in dataset_num_proc contiguous shards.
  o.pack.map_num_proc = static_cast<uint32_t>(std::max<int64_t>(1, a.dataset_num_proc.value_or(1)));
  o.cache_dir = cache_dir;
  o.num_threads = static_cast<uint32_t>(std::max<int64_t>(0, a.num_threads.value_or(0)));
  o.show_progress = !a.disable_tqdm.value_or(false);
  if (a.shuffle_dataset)
    log_warn("[data] --shuffle_dataset is not applied during preparation (rows keep file order;",
             " the trainer's sampler shuffles every epoch)");
  return o;
}

}  // namespace sft
