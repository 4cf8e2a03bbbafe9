#include "optim/zero_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "core/error.h"

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

std::vector<ShardRange> runs_outside_layers(std::vector<ShardRange> layers, size_t n,
                                            const char* who) {
  std::erase_if(layers, [](const ShardRange& r) { return r.size() == 0; });
  std::sort(layers.begin(), layers.end(),
            [](const ShardRange& a, const ShardRange& b) { return a.begin < b.begin; });
  std::vector<ShardRange> outside;
  size_t at = 0;
  for (const ShardRange& r : layers) {
    if (r.begin < at || r.end > n)
      fail("optim", std::string(who) + ": layer runs overlap or pass the end of the parameters");
    if (r.begin > at) outside.push_back({at, r.begin});
    at = r.end;
  }
  if (at < n) outside.push_back({at, n});
  return outside;
}

}  // namespace sft
