// Workspace: scratch memory a kernel borrows from its caller for one call. Kernels keep no
// hidden buffers (no static, no thread_local): the caller sizes the workspace with the op's
// *_workspace_bytes function (ops/ops.h) and carves it from its own arena, once per shape, so
// the step loop never allocates and the memory is visible, owned and counted.
//
// A Workspace is a byte span plus a bump offset, passed by value: each call starts at the
// beginning and hands out 64-byte-aligned pieces (take). Asking for more than the span holds
// fails as "[ops] <op>: workspace of N bytes, needs M (hint: ...)", naming the op. Contents
// are unspecified on entry and after the call (the kernel fully writes what it reads).
// A kernel whose scratch is per worker sizes it for every thread of default_thread_pool();
// the size functions do the same (workspace_workers()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "core/arena.h"
#include "core/error.h"
#include "core/thread_pool.h"

namespace sft::ops {

class Workspace {
 public:
  Workspace() = default;
  Workspace(std::byte* data, size_t bytes) : data_(data), size_(bytes) {}

  // A workspace that only counts: take() hands out null and used() is what a layout needs, so
  // a size function can run the kernel's own layout code (they cannot disagree).
  static Workspace measuring() { return Workspace(nullptr, std::numeric_limits<size_t>::max()); }

  size_t size() const { return size_; }
  size_t used() const { return used_; }
  std::byte* data() const { return data_; }

  // What is left after the pieces taken so far (for a nested call).
  Workspace rest() const { return Workspace(data_ ? data_ + used_ : nullptr, size_ - used_); }

  // Fails unless `bytes` more fit; `op` names the caller in the error.
  void require(const char* op, size_t bytes) const {
    if (bytes > size_ - used_)
      fail("ops", std::string(op) + ": workspace of " + std::to_string(size_) + " bytes, needs " +
                      std::to_string(used_ + bytes) +
                      " (hint: size it with the op's *_workspace_bytes for the largest call)");
  }

  // n elements of T, 64-byte aligned (the size is rounded up to whole 64-byte lines).
  template <typename T>
  T* take(int64_t n, const char* op) {
    const size_t bytes = aligned_bytes(static_cast<size_t>(n < 0 ? 0 : n) * sizeof(T));
    require(op, bytes);
    std::byte* p = data_ ? data_ + used_ : nullptr;
    used_ += bytes;
    return reinterpret_cast<T*>(p);
  }

  // What take(n) of T consumes: the size functions sum these.
  template <typename T>
  static size_t bytes_for(int64_t n) {
    return aligned_bytes(static_cast<size_t>(n < 0 ? 0 : n) * sizeof(T));
  }

 private:
  static size_t aligned_bytes(size_t b) {
    return (b + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
  }

  std::byte* data_ = nullptr;
  size_t size_ = 0;
  size_t used_ = 0;
};

// Runs layout(Workspace&) twice, as core/arena.h's carve(): on a measuring workspace, so that
// one too small fails before anything is taken and with the whole need in the message, then on
// ws. Returns what the second run returns.
template <typename Layout>
auto take_layout(Workspace& ws, const char* op, Layout&& layout) {
  Workspace probe = Workspace::measuring();
  layout(probe);
  ws.require(op, probe.used());
  return layout(ws);
}

// A workspace of `bytes` carved with the caller's other views (core/arena.h): in carve()'s
// measuring pass the data is null, which is fine since nothing reads it then.
inline Workspace take_workspace(Carver& cv, size_t bytes) {
  return Workspace(cv.take<std::byte>(static_cast<int64_t>(bytes)), bytes);
}

// An arena that only serves workspaces: for callers without a layout of their own (tests,
// benches, tools). It grows to the largest request and is reused.
class WorkspaceArena {
 public:
  Workspace get(size_t bytes) {
    arena_.reserve(bytes);
    return Workspace(arena_.data(), bytes);
  }
  const Arena& arena() const { return arena_; }

 private:
  Arena arena_;
};

// The workers a per-worker scratch is sized for: every thread of default_thread_pool().
inline int64_t workspace_workers() {
  return static_cast<int64_t>(default_thread_pool().size());
}

}  // namespace sft::ops
