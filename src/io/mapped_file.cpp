#include "io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
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

std::string read_text_file(const std::string& path, std::string_view component) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(component, "cannot open " + path + ": " + errno_text(errno));
  std::ostringstream out;
  out << in.rdbuf();
  if (in.bad()) fail(component, "cannot read " + path + ": " + errno_text(errno));
  return out.str();
}

}  // namespace sft
