// Resolving a model or dataset argument the way transformers / huggingface_hub do.
//
// A local folder wins. Otherwise "ORG/NAME" is looked up in the Hub cache:
//   $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub
//   <cache>/models--ORG--NAME/snapshots/<commit>, where <commit> = refs/<revision>
//   (revision "main" by default) or the revision itself when it is a commit hash.
// A snapshot already there is used without asking the network (for datasets at "main", the
// Hub's parquet conversion refs/convert/parquet counts too). When it is missing, the files a
// run needs are downloaded into that cache (io/hub/snapshot.h) from $HF_ENDPOINT, unless
// HF_HUB_OFFLINE=1.
#pragma once

#include <string>
#include <vector>

namespace sft {

// The Hub cache folder from the environment (does not check that it exists).
std::string hf_hub_cache_dir();

enum class HubRepoType { kModel, kDataset };

// Returns the folder holding the files; throws sft::Error("[hub] ...") saying every place
// it looked, or why the download failed, when there is none. `dataset_config` chooses which
// data files a dataset download fetches.
std::string resolve_hub_folder(const std::string& name_or_path, HubRepoType type,
                               const std::string& revision = "main",
                               const std::string& dataset_config = "");

}  // namespace sft
