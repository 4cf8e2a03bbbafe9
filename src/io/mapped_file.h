// A read-only memory map of a whole file, shared by the tensors that borrow from it.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>

namespace sft {

class MappedFile {
 public:
  // Throws sft::Error("[io] ...") naming the file when it cannot be opened or mapped.
  static std::shared_ptr<const MappedFile> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  std::span<const std::byte> bytes() const { return {data_, size_}; }
  size_t size() const { return size_; }
  // Hands back the whole pages inside [offset, offset + bytes) that this process has read: the
  // mapping is read-only and private, so they stay in the OS page cache and a later read faults
  // them in again, unchanged. A loader that converts a tensor into memory of its own calls it
  // once done, so the file's pages do not add to the peak resident memory beside the copy.
  void release_pages(size_t offset, size_t bytes) const;

 private:
  MappedFile() = default;

  std::string path_;
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

// Whole file as a string (for small text files: JSON configs, templates).
std::string read_text_file(const std::string& path, std::string_view component);

}  // namespace sft
