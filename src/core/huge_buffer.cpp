// A kept scratch buffer on transparent huge pages. See huge_buffer.h.
#include "core/huge_buffer.h"

#include <sys/mman.h>

#include <cstdint>
#include <string>

#include "core/error.h"

namespace sft {

namespace {
constexpr size_t kHugePage = size_t{2} << 20;
}

void advise_huge_pages(void* data, size_t bytes) {
  const auto b = reinterpret_cast<uintptr_t>(data);
  const uintptr_t pb = (b + kHugePage - 1) & ~uintptr_t{kHugePage - 1};
  const uintptr_t pe = (b + bytes) & ~uintptr_t{kHugePage - 1};
  if (pe > pb) madvise(reinterpret_cast<void*>(pb), pe - pb, MADV_HUGEPAGE);
}

HugeBuffer::~HugeBuffer() {
  if (data_) munmap(data_, bytes_);
}

std::byte* HugeBuffer::reserve(size_t bytes) {
  if (bytes <= bytes_ && data_) return data_;
  if (data_) munmap(data_, bytes_);
  data_ = nullptr;
  bytes_ = 0;
  const size_t want = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  if (want == 0) return nullptr;
  // Over-map by one huge page and trim, so the kept part starts on a 2 MiB boundary (a huge
  // page can only back an aligned 2 MiB range).
  const size_t mapped = want + kHugePage;
  void* raw = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED)
    fail("memory", "out of memory mapping a " + std::to_string(want >> 20) +
                       " MiB scratch buffer (hint: fewer ranks per host, or a smaller model)");
  const auto base = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (base + kHugePage - 1) & ~uintptr_t{kHugePage - 1};
  if (aligned > base) munmap(raw, aligned - base);
  if (aligned + want < base + mapped)
    munmap(reinterpret_cast<void*>(aligned + want), base + mapped - (aligned + want));
  madvise(reinterpret_cast<void*>(aligned), want, MADV_HUGEPAGE);  // a hint: ignored if refused
  data_ = reinterpret_cast<std::byte*>(aligned);
  bytes_ = want;
  return data_;
}

}  // namespace sft
