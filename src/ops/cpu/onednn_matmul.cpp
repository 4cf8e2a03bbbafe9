// oneDNN matmul primitives, cached by problem, executed on the caller's thread.
//
// Decisions, and why:
// - The primitive API (dnnl::matmul) rather than dnnl_sgemm: Debian's oneDNN 2.6 has no bf16
//   GEMM C function, and only the primitive dispatches to the brgemm AMX / AVX512-BF16 kernels.
// - Layouts by strides, not copies: op(A) is the logical (M, K) tensor with strides {lda, 1},
//   or {1, lda} when A is stored transposed; likewise B and C. accumulate is the sum post-op
//   (C = A·B + 1.0·C), so C is only read when asked to.
// - A cache keyed by (type, M, N, K, ta, tb, lda, ldb, ldc, accumulate, threads) holds the
//   primitive and three dnnl::memory objects whose data handles are re-pointed per call, and
//   execution goes through the C API with a stack array of arguments: no heap allocation per
//   call once a shape has been seen. The cache is small (a training step has a few dozen
//   shapes); past kMaxPrimitives it is dropped and refilled rather than tracked as an LRU.
// - Threads: oneDNN runs on the OpenMP team of the calling thread, which is our pool's team
//   (core/thread_pool.h: one runtime serves both), sized to default_thread_pool().size() by
//   size_openmp_team_of_this_thread(). Running oneDNN single-threaded inside each pool worker on
//   a slice of the output was tried and rejected: in a probe the slices (C strided by the full
//   N) were dispatched to gemm:jit instead of the brgemm AMX kernels, each slice re-packs the
//   shared operand, and oneDNN's own partition over a pool-sized team is what its kernels are
//   tuned for. Callers must therefore not be pool workers; a mutex serialises accidental
//   concurrent callers (the cached memory objects are shared).
// - Known cost: each new shape is JIT-compiled (tens of ms), and on an oversubscribed machine
//   spinning barriers make small calls slower; matmul.cpp keeps f32 problems below 2^27
//   multiply-adds on OpenBLAS.
// - Determinism: oneDNN's static OpenMP partition depends only on the shape and the team
//   size, so a given thread count gives bit-identical results run to run (tests check it).
#include "ops/cpu/onednn_matmul.h"

#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>

#include "core/error.h"
#include "core/thread_pool.h"

namespace sft::ops::onednn {

namespace {

using dnnl::memory;

constexpr size_t kMaxPrimitives = 512;

struct Key {
  Operand type;
  int64_t M, N, K;
  bool ta, tb, accumulate;
  int64_t lda, ldb, ldc;
  int threads;
  auto tie() const { return std::tie(type, M, N, K, ta, tb, accumulate, lda, ldb, ldc, threads); }
  bool operator<(const Key& o) const { return tie() < o.tie(); }
};

struct Entry {
  dnnl::matmul primitive;
  memory a, b, c;
};

struct Runtime {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::mutex mutex;
  std::map<Key, std::unique_ptr<Entry>> cache;
};

Runtime& runtime() {
  static Runtime r;
  return r;
}

memory::data_type data_type(Operand t) {
  return t == Operand::f32 ? memory::data_type::f32 : memory::data_type::bf16;
}

dnnl::matmul::primitive_desc describe(Runtime& rt, const Key& k) {
  const memory::data_type dt = data_type(k.type);
  const memory::desc a({k.M, k.K}, dt, k.ta ? memory::dims{1, k.lda} : memory::dims{k.lda, 1});
  const memory::desc b({k.K, k.N}, dt, k.tb ? memory::dims{1, k.ldb} : memory::dims{k.ldb, 1});
  const memory::desc c({k.M, k.N}, memory::data_type::f32, memory::dims{k.ldc, 1});
  dnnl::primitive_attr attr;
  if (k.accumulate) {
    dnnl::post_ops ops;
    ops.append_sum(1.0f);
    attr.set_post_ops(ops);
  }
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), attr, rt.engine);
}

Entry& entry_for(Runtime& rt, const Key& k) {
  auto it = rt.cache.find(k);
  if (it != rt.cache.end()) return *it->second;
  if (rt.cache.size() >= kMaxPrimitives) rt.cache.clear();
  const dnnl::matmul::primitive_desc pd = describe(rt, k);
  auto e = std::make_unique<Entry>();
  e->primitive = dnnl::matmul(pd);
  // DNNL_MEMORY_NONE: the handles are set on every call.
  e->a = memory(pd.src_desc(), rt.engine, DNNL_MEMORY_NONE);
  e->b = memory(pd.weights_desc(), rt.engine, DNNL_MEMORY_NONE);
  e->c = memory(pd.dst_desc(), rt.engine, DNNL_MEMORY_NONE);
  return *rt.cache.emplace(k, std::move(e)).first->second;
}

[[noreturn]] void fail_dnnl(const dnnl::error& e, const Key& k) {
  fail("onednn", std::string("matmul ") + std::to_string(k.M) + "x" + std::to_string(k.N) + "x" +
                     std::to_string(k.K) + " failed: " + e.what() +
                     " (hint: run with ONEDNN_VERBOSE=1 to see what oneDNN tried)");
}

}  // namespace

void matmul(Operand type, float* c, const void* a, const void* b, int64_t M, int64_t N, int64_t K,
            bool trans_a, bool trans_b, bool accumulate, int64_t lda, int64_t ldb, int64_t ldc) {
  Runtime& rt = runtime();
  const Key key{type,
                M,
                N,
                K,
                trans_a,
                trans_b,
                accumulate,
                lda,
                ldb,
                ldc,
                size_openmp_team_of_this_thread()};
  std::lock_guard<std::mutex> lock(rt.mutex);
  try {
    Entry& e = entry_for(rt, key);
    e.a.set_data_handle(const_cast<void*>(a));
    e.b.set_data_handle(const_cast<void*>(b));
    e.c.set_data_handle(c);
    const dnnl_exec_arg_t args[3] = {
        {DNNL_ARG_SRC, e.a.get()}, {DNNL_ARG_WEIGHTS, e.b.get()}, {DNNL_ARG_DST, e.c.get()}};
    dnnl::error::wrap_c_api(dnnl_primitive_execute(e.primitive.get(), rt.stream.get(), 3, args),
                            "could not execute a matmul primitive");
    rt.stream.wait();
  } catch (const dnnl::error& err) {
    fail_dnnl(err, key);
  }
}

std::string implementation(Operand type, int64_t M, int64_t N, int64_t K, bool trans_a,
                           bool trans_b) {
  Runtime& rt = runtime();
  const Key key{type,
                M,
                N,
                K,
                trans_a,
                trans_b,
                false,
                trans_a ? M : K,
                trans_b ? K : N,
                N,
                size_openmp_team_of_this_thread()};
  try {
    return describe(rt, key).impl_info_str();
  } catch (const dnnl::error&) {
    return "none";
  }
}

bool supports_bf16() {
  static const bool ok = implementation(Operand::bf16, 8, 8, 8, false, false) != "none";
  return ok;
}

std::string effective_isa() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::sse41:
      return "sse41";
    case dnnl::cpu_isa::avx:
      return "avx";
    case dnnl::cpu_isa::avx2:
      return "avx2";
    case dnnl::cpu_isa::avx2_vnni:
      return "avx2_vnni";
    case dnnl::cpu_isa::avx512_mic:
      return "avx512_mic";
    case dnnl::cpu_isa::avx512_mic_4ops:
      return "avx512_mic_4ops";
    case dnnl::cpu_isa::avx512_core:
      return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "all";
  }
}

size_t cached_primitives() {
  Runtime& rt = runtime();
  std::lock_guard<std::mutex> lock(rt.mutex);
  return rt.cache.size();
}

}  // namespace sft::ops::onednn
