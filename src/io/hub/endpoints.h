// Where things are on the Hub and in its cache, spelled as huggingface_hub spells them.
//
//   endpoint       $HF_ENDPOINT (a mirror, or the tests' server), else https://huggingface.co
//   revision info  {endpoint}/api/{models|datasets}/{repo}/revision/{revision, '/' quoted}
//   file           {endpoint}/{repo}/resolve/{revision}/{path}          (models)
//                  {endpoint}/datasets/{repo}/resolve/{revision}/{path} (datasets)
//   cache folder   models--ORG--NAME / datasets--ORG--NAME
// The token and offline switches follow huggingface_hub's environment: HF_TOKEN, else the
// file $HF_TOKEN_PATH, else $HF_HOME/token (HF_HOME defaults to ~/.cache/huggingface);
// HF_HUB_OFFLINE=1 (or true/yes/on) forbids any network access.
#pragma once

#include <optional>
#include <string>

#include "io/hf_hub.h"

namespace sft::hub {

struct RepoRef {
  HubRepoType type = HubRepoType::kModel;
  std::string id;  // "ORG/NAME"

  const char* kind() const { return type == HubRepoType::kModel ? "model" : "dataset"; }
};

std::string hub_endpoint();
// Percent-encodes everything but unreserved characters (and '/' when keep_slash).
std::string url_quote(const std::string& text, bool keep_slash);

std::string revision_info_url(const std::string& endpoint, const RepoRef& repo,
                              const std::string& revision);
std::string resolve_url(const std::string& endpoint, const RepoRef& repo,
                        const std::string& revision, const std::string& path);
// Web page of the repo, for messages ("https://huggingface.co/datasets/ORG/NAME").
std::string repo_page_url(const std::string& endpoint, const RepoRef& repo);

std::string repo_folder_name(const RepoRef& repo);

std::optional<std::string> hub_token();
bool hub_offline();

}  // namespace sft::hub
