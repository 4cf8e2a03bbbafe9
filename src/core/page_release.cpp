#include "core/page_release.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

namespace sft {

void zero_and_release(void* data, size_t bytes) {
  if (bytes == 0) return;
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t b = reinterpret_cast<uintptr_t>(data), e = b + bytes;
  const uintptr_t pb = (b + page - 1) / page * page, pe = e / page * page;
  if (pb >= pe) {
    std::memset(data, 0, bytes);
    return;
  }
  std::memset(data, 0, pb - b);
  std::memset(reinterpret_cast<void*>(pe), 0, e - pe);
  // On failure (not anonymous memory) the pages are cleared instead: the same contents.
  if (madvise(reinterpret_cast<void*>(pb), pe - pb, MADV_DONTNEED) != 0)
    std::memset(reinterpret_cast<void*>(pb), 0, pe - pb);
}

}  // namespace sft
