// Growable buffers for AMX tiles and other cache-line-sized rows, aligned to the 64-byte line.
//
// A tile row is 64 bytes. malloc hands large blocks out 16 bytes past a page boundary, so in a
// plain std::vector every row of every tile load straddles two cache lines: twice the L1
// accesses, and the 4-bit tile product ran at ~1.0 instead of ~1.5 TFLOP/s a thread (Qwen3's
// 1024 × 2048 × 2048, operands from L2). Same interface as std::vector; new elements are
// value-initialized as there.
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace sft::ops::cpu {

constexpr std::size_t kCacheLine = 64;

template <class T>
struct CacheLineAllocator {
  using value_type = T;
  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{kCacheLine}));
  }
  void deallocate(T* p, std::size_t) noexcept {
    ::operator delete (p, std::align_val_t{kCacheLine});
  }
  template <class U>
  bool operator==(const CacheLineAllocator<U>&) const noexcept {
    return true;
  }
};

template <class T>
using CacheLineVector = std::vector<T, CacheLineAllocator<T>>;

}  // namespace sft::ops::cpu
