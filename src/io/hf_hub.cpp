#include "io/hf_hub.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/error.h"

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

bool is_commit_hash(const std::string& s) {
  return s.size() == 40 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t start = 0;
  while (start < s.size() && std::isspace(static_cast<unsigned char>(s[start]))) ++start;
  return s.substr(start);
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
                               const std::string& revision) {
  if (fs::is_directory(name_or_path)) return name_or_path;
  const char* kind = type == HubRepoType::kModel ? "model" : "dataset";
  if (!looks_like_repo_id(name_or_path)) {
    fail("hub", std::string(kind) + " '" + name_or_path +
                    "' is not an existing folder (hint: pass a folder with config.json, or a Hub "
                    "id like Qwen/Qwen3-0.6B)");
  }
  std::string folder_name = std::string(type == HubRepoType::kModel ? "models--" : "datasets--");
  for (char c : name_or_path) {
    if (c == '/') {
      folder_name += "--";
    } else {
      folder_name += c;
    }
  }
  const fs::path repo = fs::path(hf_hub_cache_dir()) / folder_name;
  std::string commit = revision;
  const fs::path ref = repo / "refs" / revision;
  if (!is_commit_hash(revision)) {
    std::ifstream in(ref);
    if (in) {
      std::getline(in, commit);
      commit = trim(commit);
    } else {
      commit.clear();
    }
  }
  const fs::path snapshot = repo / "snapshots" / commit;
  if (!commit.empty() && fs::is_directory(snapshot)) return snapshot.string();

  std::string message = std::string(kind) + " '" + name_or_path +
                        "' not found: it is not a local folder, and the HF cache has no ";
  message += commit.empty() ? "ref " + ref.string() : "snapshot " + snapshot.string();
  message += " (hint: sft does not download yet; fetch it with `hf download " +
             name_or_path + (type == HubRepoType::kDataset ? " --repo-type dataset" : "") +
             "`, set HF_HUB_CACHE/HF_HOME to the cache that has it, or pass a local folder)";
  fail("hub", message);
}

}  // namespace sft
