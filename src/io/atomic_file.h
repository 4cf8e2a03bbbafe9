// Writing files so that readers see the old file or the complete new one, never a part.
//
// AtomicFile writes to "<path>.tmp-<pid>-<n>" in the same directory; commit() flushes,
// fsyncs, renames over `path` and fsyncs the directory. A file never committed (an
// exception, a crash) leaves the destination untouched and its temp file removed.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace sft {

class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();  // removes the temp file unless committed
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(std::span<const std::byte> bytes);
  void write(std::string_view text);
  void commit();

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string temp_path_;
  int fd_ = -1;
  bool committed_ = false;
};

// Convenience: the whole content at once.
void write_file_atomically(const std::string& path, std::string_view content);

}  // namespace sft
