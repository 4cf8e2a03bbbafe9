// Resolving a model or dataset argument the way transformers / huggingface_hub do,
// from local files only (downloading is a later feature).
//
// A local folder wins. Otherwise "ORG/NAME" is looked up in the Hub cache:
//   $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub
//   <cache>/models--ORG--NAME/snapshots/<commit>, where <commit> = refs/<revision>
//   (revision "main" by default) or the revision itself when it is a commit hash.
#pragma once

#include <string>
#include <vector>

namespace sft {

// The Hub cache folder from the environment (does not check that it exists).
std::string hf_hub_cache_dir();

enum class HubRepoType { kModel, kDataset };

// Returns the folder holding the files; throws sft::Error("[hub] ...") saying every place
// it looked when there is none.
std::string resolve_hub_folder(const std::string& name_or_path, HubRepoType type,
                               const std::string& revision = "main");

}  // namespace sft
