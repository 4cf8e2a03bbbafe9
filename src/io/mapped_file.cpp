#include "io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace sft {

std::shared_ptr<const MappedFile> MappedFile::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("io", "cannot open " + path + ": " + errno_text(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    int err = errno;
    ::close(fd);
    fail("io", "cannot read " + path + ": " + (err ? errno_text(err) : "not a regular file"));
  }
  std::shared_ptr<MappedFile> file(new MappedFile());
  file->path_ = path;
  file->size_ = static_cast<size_t>(st.st_size);
  if (file->size_ > 0) {
    void* p = ::mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      fail("io", "cannot map " + path + ": " + errno_text(err));
    }
    file->data_ = static_cast<const std::byte*>(p);
  }
  ::close(fd);  // the mapping stays valid without the descriptor
  return file;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
}

void MappedFile::release_pages(size_t offset, size_t bytes) const {
  if (offset >= size_ || bytes == 0) return;
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t b = reinterpret_cast<uintptr_t>(data_) + offset;
  const uintptr_t e = b + std::min(bytes, size_ - offset);
  // Only whole pages: a page shared with a neighbouring tensor may still be in use.
  const uintptr_t pb = (b + page - 1) / page * page, pe = e / page * page;
  // Advice only: on failure the pages simply stay resident.
  if (pb < pe) (void)::madvise(reinterpret_cast<void*>(pb), pe - pb, MADV_DONTNEED);
}

std::string read_text_file(const std::string& path, std::string_view component) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(component, "cannot open " + path + ": " + errno_text(errno));
  std::ostringstream out;
  out << in.rdbuf();
  if (in.bad()) fail(component, "cannot read " + path + ": " + errno_text(errno));
  return out.str();
}

}  // namespace sft
