// One repo's folder in the Hub cache, written exactly as huggingface_hub writes it, so the
// Python stack and sft share downloads both ways:
//
//   <cache>/models--ORG--NAME/
//     blobs/<etag>                  file contents; LFS files are named by their sha256
//     blobs/<etag>.incomplete       a download in progress (resumed with a Range request)
//     snapshots/<commit>/<path>     relative symlinks "../../blobs/<etag>" (one more ../ per
//                                   folder level of <path>)
//     refs/<revision>               the bare commit, no newline (refs/refs/convert/parquet too)
//     .locks/ is beside the repos:  <cache>/.locks/models--ORG--NAME/<etag>.lock (flock)
//
// A blob reaches blobs/<etag> only by rename() of a complete, verified .incomplete file, and a
// snapshot link is made only to a complete blob, so a snapshot never shows a partial file.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "io/hub/endpoints.h"

namespace sft::hub {

class CacheRepo {
 public:
  CacheRepo(const std::string& cache_dir, const RepoRef& repo);

  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path blob_path(const std::string& etag) const;
  std::filesystem::path incomplete_path(const std::string& etag) const;
  std::filesystem::path lock_path(const std::string& etag) const;
  std::filesystem::path snapshot_dir(const std::string& commit) const;
  std::filesystem::path pointer_path(const std::string& commit, const std::string& file) const;

  // The commit refs/<revision> names, if any (a 40-hex revision is its own commit).
  std::optional<std::string> read_ref(const std::string& revision) const;
  // Writes refs/<revision> atomically; nothing when revision is the commit itself.
  void write_ref(const std::string& revision, const std::string& commit) const;
  // snapshots/<commit>/<file> → the blob, as a relative link, replacing any older link
  // atomically (a link made under a temporary name, then renamed over).
  void link(const std::string& commit, const std::string& file, const std::string& etag) const;
  // Moves a complete .incomplete file to blobs/<etag>.
  void publish_blob(const std::string& etag) const;

 private:
  std::filesystem::path root_, locks_;
};

// Holds an exclusive flock on a lock file (created with its folders) for its lifetime.
class FileLock {
 public:
  explicit FileLock(const std::filesystem::path& path);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

bool is_commit_hash(const std::string& s);

}  // namespace sft::hub
