#include "io/hub/cache_repo.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>

#include "core/error.h"
#include "io/atomic_file.h"

namespace sft::hub {

namespace fs = std::filesystem;

namespace {

void make_dirs(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    fail("hub", "cannot create folder " + dir.string() + ": " + ec.message() +
                    " (hint: check the permissions of the HF cache, or set HF_HUB_CACHE)");
}

}  // namespace

bool is_commit_hash(const std::string& s) {
  return s.size() == 40 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

CacheRepo::CacheRepo(const std::string& cache_dir, const RepoRef& repo)
    : root_(fs::path(cache_dir) / repo_folder_name(repo)),
      locks_(fs::path(cache_dir) / ".locks" / repo_folder_name(repo)) {}

fs::path CacheRepo::blob_path(const std::string& etag) const {
  return root_ / "blobs" / etag;
}

fs::path CacheRepo::incomplete_path(const std::string& etag) const {
  return root_ / "blobs" / (etag + ".incomplete");
}

fs::path CacheRepo::lock_path(const std::string& etag) const {
  return locks_ / (etag + ".lock");
}

fs::path CacheRepo::snapshot_dir(const std::string& commit) const {
  return root_ / "snapshots" / commit;
}

fs::path CacheRepo::pointer_path(const std::string& commit, const std::string& file) const {
  return snapshot_dir(commit) / fs::path(file);
}

std::optional<std::string> CacheRepo::read_ref(const std::string& revision) const {
  if (is_commit_hash(revision)) return revision;
  std::ifstream in(root_ / "refs" / revision);
  std::string commit;
  if (!in || !std::getline(in, commit)) return std::nullopt;
  while (!commit.empty() && std::isspace(static_cast<unsigned char>(commit.back())))
    commit.pop_back();
  if (commit.empty()) return std::nullopt;
  return commit;
}

void CacheRepo::write_ref(const std::string& revision, const std::string& commit) const {
  if (revision == commit) return;
  const fs::path ref = root_ / "refs" / revision;
  if (read_ref(revision) == commit) return;
  make_dirs(ref.parent_path());
  write_file_atomically(ref.string(), commit);
}

void CacheRepo::link(const std::string& commit, const std::string& file,
                     const std::string& etag) const {
  const fs::path pointer = pointer_path(commit, file);
  make_dirs(pointer.parent_path());
  // Relative to the link's folder, as huggingface_hub's os.path.relpath makes it.
  const fs::path target = blob_path(etag).lexically_relative(pointer.parent_path());
  const fs::path temp = pointer.string() + ".link-" + std::to_string(::getpid());
  std::error_code ec;
  fs::remove(temp, ec);
  fs::create_symlink(target, temp, ec);
  if (!ec) fs::rename(temp, pointer, ec);
  if (ec) {
    fs::remove(temp);
    fail("hub", "cannot link " + pointer.string() + " to " + target.string() + ": " + ec.message() +
                    " (hint: the HF cache needs a file system with symlinks)");
  }
}

void CacheRepo::publish_blob(const std::string& etag) const {
  std::error_code ec;
  fs::rename(incomplete_path(etag), blob_path(etag), ec);
  if (ec)
    fail("hub", "cannot move " + incomplete_path(etag).string() + " into place: " + ec.message());
}

FileLock::FileLock(const fs::path& path) {
  make_dirs(path.parent_path());
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("hub", "cannot open lock file " + path.string() + ": " + errno_text(errno));
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno != EINTR) fail("hub", "cannot lock " + path.string() + ": " + errno_text(errno));
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the lock
}

}  // namespace sft::hub
