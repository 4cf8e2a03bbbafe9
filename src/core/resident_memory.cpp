#include "core/resident_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"

namespace sft {

size_t resident_bytes(const void* data, size_t bytes) {
  if (bytes == 0) return 0;
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t b = reinterpret_cast<uintptr_t>(data) / page * page;
  const uintptr_t e = (reinterpret_cast<uintptr_t>(data) + bytes + page - 1) / page * page;
  std::vector<unsigned char> in_core((e - b) / page);
  if (mincore(reinterpret_cast<void*>(b), e - b, in_core.data()) != 0)
    fail("core", std::string("resident_bytes: mincore failed: ") + std::strerror(errno) +
                     " (hint: the range must be mapped host memory)");
  size_t pages = 0;
  for (unsigned char c : in_core) pages += c & 1;
  return pages * page;
}

}  // namespace sft
