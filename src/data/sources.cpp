#include "data/sources.h"

#include <fnmatch.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <span>

#include "core/error.h"
#include "io/hf_hub.h"

namespace sft::data {

namespace {

namespace fs = std::filesystem;

bool is_data_file(const fs::path& p) {
  std::string ext = p.extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext == ".parquet" || ext == ".jsonl" || ext == ".json" || ext == ".ndjson";
}

bool has_glob(const std::string& s) {
  return s.find_first_of("*?[") != std::string::npos;
}

// Data files under `root` (relative, '/'-separated), skipping hidden folders and files.
// Paths are taken lexically: in the HF cache each snapshot file is a relative symlink into
// blobs/, and fs::relative would resolve it to the blob's name (an etag, no extension).
std::vector<std::string> list_data_files(const fs::path& root) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(
           root, fs::directory_options::follow_directory_symlink, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    const std::string name = it->path().filename().string();
    if (!name.empty() && name[0] == '.') {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file() && is_data_file(it->path()))
      out.push_back(it->path().lexically_relative(root).generic_string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The words of a relative path without its extension: "data/train-00000-of-00002.parquet"
// → {data, train, of}.
std::set<std::string> path_words(const std::string& rel) {
  std::string stem = rel.substr(0, rel.size() - fs::path(rel).extension().string().size());
  std::set<std::string> words;
  std::string word;
  for (char c : stem + "/") {
    if (c == '-' || c == '_' || c == '.' || c == ' ' || c == '/' || (c >= '0' && c <= '9')) {
      if (!word.empty()) words.insert(word);
      word.clear();
    } else {
      word += c;
    }
  }
  return words;
}

bool names_any_split(const std::set<std::string>& words) {
  for (const char* s : {"train", "test", "validation", "valid", "dev", "eval"})
    if (words.count(s)) return true;
  return false;
}

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t slash = std::min(path.find('/', start), path.size());
    parts.push_back(path.substr(start, slash - start));
    start = slash + 1;
  }
  return parts;
}

// Glob matching as datasets' (fsspec's) data_files patterns: `*`, `?` and `[...]` stay within
// one path segment; a `**` segment matches any number of folders (none included).
bool glob_matches(std::span<const std::string> pattern, std::span<const std::string> path) {
  if (pattern.empty()) return path.empty();
  if (pattern[0] == "**") {
    for (size_t skip = 0; skip <= path.size(); ++skip)
      if (glob_matches(pattern.subspan(1), path.subspan(skip))) return true;
    return false;
  }
  return !path.empty() && fnmatch(pattern[0].c_str(), path[0].c_str(), FNM_PERIOD) == 0 &&
         glob_matches(pattern.subspan(1), path.subspan(1));
}

std::vector<std::string> glob_files(const std::string& pattern) {
  // The folder to list: the pattern's longest leading part without glob characters.
  size_t cut = pattern.find_first_of("*?[");
  size_t slash = pattern.rfind('/', cut);
  fs::path base = slash == std::string::npos ? fs::path(".") : fs::path(pattern.substr(0, slash));
  std::vector<std::string> out;
  if (!fs::is_directory(base)) return out;
  const std::vector<std::string> pattern_parts = split_path(pattern);
  for (const std::string& rel : list_data_files(base)) {
    std::string full = slash == std::string::npos ? rel : (base / rel).generic_string();
    if (glob_matches(pattern_parts, split_path(full))) out.push_back(full);
  }
  return out;
}

struct FolderSearch {
  std::vector<std::string> files;
  std::string looked;  // for the error message
};

FolderSearch search_folder(const fs::path& folder, const std::string& config,
                           const std::string& split) {
  FolderSearch result;
  std::vector<std::string> all = list_data_files(folder);
  std::string scope = config;
  if (!config.empty()) {
    if (!fs::is_directory(folder / config))
      fail("data", "dataset folder " + folder.string() + " has no config '" + config +
                       "' (no folder " + (folder / config).string() +
                       ") (hint: check --dataset_config; leave it unset for a dataset without "
                       "configs)");
  } else if (fs::is_directory(folder / "default")) {
    scope = "default";  // the Hub's parquet conversion
  }
  std::vector<std::string> in_scope;
  for (const std::string& rel : all)
    if (scope.empty() || rel.rfind(scope + "/", 0) == 0) in_scope.push_back(rel);
  bool any_split_named = false;
  for (const std::string& rel : in_scope) {
    auto words = path_words(scope.empty() ? rel : rel.substr(scope.size() + 1));
    any_split_named |= names_any_split(words);
    if (words.count(split)) result.files.push_back((folder / rel).string());
  }
  if (result.files.empty() && !any_split_named && split == "train") {
    for (const std::string& rel : in_scope) result.files.push_back((folder / rel).string());
  }
  result.looked = "data files (.parquet, .jsonl, .json) under " +
                  (scope.empty() ? folder.string() : (folder / scope).string()) +
                  " whose path names the split '" + split + "' (e.g. data/" + split +
                  "-00000-of-00001.parquet, " + split + ".jsonl); found " +
                  (in_scope.empty() ? std::string("no data files")
                                    : std::to_string(in_scope.size()) + " others");
  return result;
}

}  // namespace

std::optional<std::vector<std::string>> find_split_files(const DatasetSource& source,
                                                         const std::string& split) {
  const std::string& name = source.name;
  if (name.empty())
    fail("data", "no dataset given (hint: --dataset_name FILE, FOLDER or ORG/NAME)");
  if (fs::is_regular_file(name)) {
    if (!is_data_file(name))
      fail("data", "'" + name +
                       "' is not a dataset file sft can read (hint: use .jsonl, .json "
                       "or .parquet)");
    if (split != "train") return std::nullopt;
    return std::vector<std::string>{name};
  }
  if (has_glob(name)) {
    auto files = glob_files(name);
    if (files.empty()) fail("data", "no .jsonl/.json/.parquet files match '" + name + "'");
    if (split != "train") return std::nullopt;
    return files;
  }
  std::string folder = fs::is_directory(name) ? name
                                              : resolve_hub_folder(name, HubRepoType::kDataset,
                                                                   source.revision, source.config);
  FolderSearch found = search_folder(folder, source.config, split);
  if (found.files.empty()) return std::nullopt;
  std::set<std::string> formats;
  for (const std::string& f : found.files) formats.insert(fs::path(f).extension().string());
  if (formats.size() > 1 && formats.count(".parquet"))
    fail("data", "split '" + split + "' of " + folder +
                     " has files of several formats (hint: point --dataset_name at one of them, "
                     "e.g. a glob like " +
                     folder + "/data/" + split + "-*.parquet)");
  return found.files;
}

std::vector<std::string> resolve_split_files(const DatasetSource& source,
                                             const std::string& split) {
  if (auto files = find_split_files(source, split)) return *files;
  const std::string& name = source.name;
  if (fs::is_regular_file(name) || has_glob(name))
    fail("data", "dataset '" + name + "' has no split '" + split +
                     "': a single file or a glob is the train split only (hint: pass the " + split +
                     " data as its own file)");
  std::string folder = fs::is_directory(name) ? name
                                              : resolve_hub_folder(name, HubRepoType::kDataset,
                                                                   source.revision, source.config);
  fail("data", "dataset '" + name + "' has no split '" + split + "': looked for " +
                   search_folder(folder, source.config, split).looked);
}

}  // namespace sft::data
