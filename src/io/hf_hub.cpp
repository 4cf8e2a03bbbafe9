#include "io/hf_hub.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "core/error.h"
#include "io/hub/cache_repo.h"
#include "io/hub/plan.h"
#include "io/hub/snapshot.h"

namespace sft {

namespace fs = std::filesystem;

namespace {

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

bool looks_like_repo_id(const std::string& s) {
  // "ORG/NAME" or "NAME": no leading "/" or ".", at most one "/", no "..", not empty.
  if (s.empty() || s.front() == '/' || s.front() == '.' || s.find("..") != std::string::npos)
    return false;
  return std::count(s.begin(), s.end(), '/') <= 1 && s.back() != '/';
}

// Whether a cached snapshot has what a run reads (a model snapshot holding only a config.json
// that something else fetched is not enough; a dataset needs a data file of the config).
bool snapshot_usable(const fs::path& snapshot, HubRepoType type,
                     const std::string& dataset_config) {
  std::error_code ec;
  if (!fs::is_directory(snapshot, ec)) return false;
  bool config = false, data = false;
  for (auto it = fs::recursive_directory_iterator(snapshot, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string rel = it->path().lexically_relative(snapshot).generic_string();
    if (!it->is_regular_file()) continue;  // also skips links whose blob is gone
    if (type == HubRepoType::kModel) {
      config |= rel == "config.json";
      data |= rel.find('/') == std::string::npos && rel.ends_with(".safetensors");
    } else {
      config = true;
      data |= hub::is_dataset_data_file(rel) &&
              (dataset_config.empty() ||
               ("/" + rel).find("/" + dataset_config + "/") != std::string::npos);
    }
  }
  return config && data;
}

}  // namespace

std::string hf_hub_cache_dir() {
  std::string cache = env_or_empty("HF_HUB_CACHE");
  if (!cache.empty()) return cache;
  std::string home = env_or_empty("HF_HOME");
  if (!home.empty()) return (fs::path(home) / "hub").string();
  std::string xdg = env_or_empty("XDG_CACHE_HOME");
  if (!xdg.empty()) return (fs::path(xdg) / "huggingface" / "hub").string();
  return (fs::path(env_or_empty("HOME")) / ".cache" / "huggingface" / "hub").string();
}

std::string resolve_hub_folder(const std::string& name_or_path, HubRepoType type,
                               const std::string& revision, const std::string& dataset_config) {
  if (fs::is_directory(name_or_path)) return name_or_path;
  const hub::RepoRef repo{type, name_or_path};
  if (!looks_like_repo_id(name_or_path)) {
    fail("hub", std::string(repo.kind()) + " '" + name_or_path +
                    "' is not an existing folder (hint: pass a folder with config.json, or a Hub "
                    "id like Qwen/Qwen3-0.6B)");
  }
  const std::string cache_dir = hf_hub_cache_dir();
  const hub::CacheRepo cache(cache_dir, repo);
  std::vector<std::string> revisions = {revision};
  if (type == HubRepoType::kDataset && revision == "main")
    revisions.push_back("refs/convert/parquet");
  for (const std::string& r : revisions) {
    if (auto commit = cache.read_ref(r)) {
      if (snapshot_usable(cache.snapshot_dir(*commit), type, dataset_config))
        return cache.snapshot_dir(*commit).string();
    }
  }

  if (hub::hub_offline()) {
    // Offline, a dataset snapshot without the config asked for is still the best answer: the
    // reader then says which configs it has.
    if (type == HubRepoType::kDataset && !dataset_config.empty())
      for (const std::string& r : revisions)
        if (auto commit = cache.read_ref(r))
          if (snapshot_usable(cache.snapshot_dir(*commit), type, ""))
            return cache.snapshot_dir(*commit).string();
    const auto commit = cache.read_ref(revision);
    std::string message = std::string(repo.kind()) + " '" + name_or_path +
                          "' is not a local folder and the HF cache has no ";
    message += commit ? "complete snapshot " + cache.snapshot_dir(*commit).string()
                      : "ref " + (cache.root() / "refs" / revision).string();
    message +=
        "; HF_HUB_OFFLINE=1 forbids downloading it (hint: unset HF_HUB_OFFLINE to "
        "download it into " +
        cache_dir +
        ", set HF_HUB_CACHE/HF_HOME to the cache that has it, or pass a "
        "local folder)";
    fail("hub", message);
  }
  hub::SnapshotOptions options;
  options.dataset_config = dataset_config;
  return hub::download_snapshot(cache_dir, repo, revision, options);
}

}  // namespace sft
