// A kept scratch buffer on transparent huge pages: allocated once at the largest size asked for
// and reused, 2 MiB aligned, with madvise(MADV_HUGEPAGE) so that the kernel backs it with 2 MiB
// pages where it can (the machine's THP mode "madvise" or "always"; a no-op under "never").
//
// Why: the collectives between ranks on one host copy through the kernel (OpenMPI's vader BTL
// with CMA: process_vm_readv pins and walks the peer's pages one by one). On 4 KiB pages that
// walk dominates; on 2 MiB pages a 32 MiB all-gather between two ranks took about half the
// time (docs/benchmarks.md, "ZeRO-3 step time"). Used for ZeRO-3's head block buffers
// (optim/zero3_head.h) and the collectives' receive buffer (parallel/comm.h). Contents are
// not preserved when it grows; new bytes are zero (fresh anonymous pages). Host memory only.
#pragma once

#include <cstddef>
#include <span>

namespace sft {

// Asks the kernel to back the whole 2 MiB pages inside [data, data + bytes) with huge pages from
// now on (madvise MADV_HUGEPAGE; a hint, ignored where refused). For an arena whose ranges are
// released and faulted in again over and over (ZeRO-3's gathered layers): one fault per 2 MiB
// instead of per 4 KiB, and the collectives' copies into it walk 512 times fewer pages.
void advise_huge_pages(void* data, size_t bytes);

class HugeBuffer {
 public:
  HugeBuffer() = default;
  ~HugeBuffer();
  HugeBuffer(const HugeBuffer&) = delete;
  HugeBuffer& operator=(const HugeBuffer&) = delete;

  // At least `bytes` (grown if smaller: the old contents are dropped), valid until the next
  // call that grows it.
  std::byte* reserve(size_t bytes);
  template <typename T>
  std::span<T> as(size_t count) {
    return {reinterpret_cast<T*>(reserve(count * sizeof(T))), count};
  }
  size_t capacity() const { return bytes_; }

 private:
  std::byte* data_ = nullptr;
  size_t bytes_ = 0;  // mapped (a multiple of 2 MiB)
};

}  // namespace sft
