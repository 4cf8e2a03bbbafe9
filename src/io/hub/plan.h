// Which files of a repo sft downloads, from the Hub's list of the revision's files.
//
// Models: what loading and training read and what save_pretrained writes back out:
//   config.json, generation_config.json, *.safetensors at the top level (+ the shard index),
//   tokenizer.json, tokenizer_config.json, special_tokens_map.json, chat_template.jinja /
//   chat_template.json. A repo without .safetensors weights is refused (sft reads no .bin).
// Datasets: the data files sft can read (.parquet, .jsonl, .json, .ndjson) of the requested
//   config, by the Hub's usual layouts: <config>/... (or any folder named like the config)
//   when a config is given; without one, default/... when the repo has it (the parquet
//   conversion), else every data file; README.md too (load_dataset reads its configs). All
//   splits of the config come along, as load_dataset downloads them.
#pragma once

#include <string>
#include <vector>

#include "io/hub/download_file.h"

namespace sft::hub {

struct RevisionInfo {
  std::string commit;
  std::vector<std::string> files;  // every file of the revision, as the Hub lists them
};

// GET /api/{models|datasets}/{repo}/revision/{revision}.
RevisionInfo fetch_revision_info(const HubSession& session, const RequestContext& context);

std::vector<std::string> plan_model_files(const std::vector<std::string>& files);
std::vector<std::string> plan_dataset_files(const std::vector<std::string>& files,
                                            const std::string& config);

bool is_dataset_data_file(const std::string& path);

}  // namespace sft::hub
