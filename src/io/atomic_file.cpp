#include "io/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <filesystem>

#include "core/error.h"

namespace sft {

namespace {
std::atomic<uint64_t> g_temp_counter{0};
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  temp_path_ =
      path_ + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(g_temp_counter++);
  fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("io", "cannot create " + temp_path_ + ": " + errno_text(errno));
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_path_.c_str());
}

void AtomicFile::write(std::span<const std::byte> bytes) {
  const std::byte* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("io", "cannot write " + temp_path_ + ": " + errno_text(errno));
    p += n;
    left -= static_cast<size_t>(n);
  }
}

void AtomicFile::write(std::string_view text) {
  write(std::span(reinterpret_cast<const std::byte*>(text.data()), text.size()));
}

void AtomicFile::commit() {
  if (::fsync(fd_) != 0) fail("io", "cannot flush " + temp_path_ + ": " + errno_text(errno));
  if (::close(fd_) != 0) {
    fd_ = -1;
    fail("io", "cannot close " + temp_path_ + ": " + errno_text(errno));
  }
  fd_ = -1;
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    fail("io", "cannot rename " + temp_path_ + " to " + path_ + ": " + errno_text(errno));
  }
  committed_ = true;
  // The rename is durable only once the directory entry is on disk.
  std::string dir = std::filesystem::path(path_).parent_path().string();
  int dir_fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

void write_file_atomically(const std::string& path, std::string_view content) {
  AtomicFile file(path);
  file.write(content);
  file.commit();
}

}  // namespace sft
