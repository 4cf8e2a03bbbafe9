// Conformance suite support (issue 11; ggml's test-backend-ops is the model): every view-level op
// of ops/ops.h, on every available backend, against the same op run in f64 on the CPU.
//
// An op case is a function run(backend, mode) → named outputs widened to double. Its inputs are
// generated inside run from fixed Philox streams on the grid of the tested dtype (mode.grid), so
// the f64 reference run sees exactly the same values, widened exactly. check_conformance runs the
// case on each backend in each tested dtype, twice (the reruns must be bit-identical), and compares
// every output with the f64 CPU run: max |got − ref| / max |ref| ≤ the op's stated tolerance.
// SFT_CONFORMANCE_REPORT=1 prints every measured error next to its tolerance.
// Outputs the op overwrites (=) start as NaN, so a kernel that reads or skips them fails; outputs
// it accumulates into (+=) start from small random values (kAccumulateStart): large enough that
// overwriting instead of adding fails, small enough not to hide the gradient's own error.
//
// The backend is the tests' parameter: each test that runs ops on a backend is a TEST_P of a
// fixture made by SFT_CONFORMANCE_SUITE(Suite), instantiated once per entry of backends() (test
// names cpu/Suite.Test/0, cuda/Suite.Test/0); on a backend that is not present it skips, saying
// why ("no CUDA device"). A backend plugs in by adding one entry to backends(): a name, its
// Device, an available() check, and allocate/release/upload/download of raw bytes (the CPU:
// new/delete and memcpy; CUDA: ops/cuda/cuda_memory.h). Token ids and targets travel the same
// way as views do. Ops a backend has no kernel for yet skip there (has_kernel); that they fail
// clearly is bad_views_test.cpp's check.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/device.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/half.h"
#include "core/rng.h"
#include "finite_differences.h"
#include "ops/backend.h"
#include "ops/cuda/cuda_memory.h"
#include "ops/ops.h"

namespace sft::conformance {

using ops::View;
using Values = std::vector<double>;

struct Backend {
  const char* name;
  Device device;
  bool (*available)();
  void* (*allocate)(size_t bytes);
  void (*release)(void* data);
  void (*upload)(void* device_dst, const void* host_src, size_t bytes);
  void (*download)(void* host_dst, const void* device_src, size_t bytes);
  const char* absent;  // the skip message where available() is false
};

// Every backend the suite knows; those whose available() is false are skipped.
inline const std::vector<Backend>& backends() {
  static const std::vector<Backend> list = {
      {"cpu", Device::kCpu, [] { return true; }, [](size_t n) { return ::operator new(n); },
       [](void* p) { ::operator delete(p); },
       [](void* d, const void* s, size_t n) { std::memcpy(d, s, n); },
       [](void* d, const void* s, size_t n) { std::memcpy(d, s, n); }, ""},
      // The copies synchronize with the kernels before them (default stream).
      {"cuda", Device::kCuda, cuda_available, ops::cuda::device_alloc, ops::cuda::device_free,
       ops::cuda::copy_to_device, ops::cuda::copy_to_host, "no CUDA device"},
  };
  return list;
}

// The reference backend: the CPU, where f64 views run the reference kernels.
inline const Backend& reference_backend() {
  return backends().front();
}

// Whether the backend has a kernel for the op family ("attention", "lm_head", "vocab_shard"):
// every family the suite names has one on CUDA now (the vocabulary shards since issue 27); a
// family added on the CPU first is listed in cpu_only until its CUDA kernel lands. CUDA runs no
// f64 (has_dtype).
inline bool has_kernel(const Backend& backend, const std::string& op) {
  static const std::vector<std::string> cpu_only = {};
  return backend.device == Device::kCpu ||
         std::find(cpu_only.begin(), cpu_only.end(), op) == cpu_only.end();
}
inline bool has_dtype(const Backend& backend, DType dtype) {
  return backend.device == Device::kCpu || dtype != DType::kF64;
}

// The fixture of a suite of tests parameterized by the backend.
class BackendTest : public ::testing::TestWithParam<const Backend*> {
 protected:
  void SetUp() override {
    if (!backend().available()) GTEST_SKIP() << backend().absent;
  }
  const Backend& backend() const { return *GetParam(); }
};

inline std::vector<const Backend*> backend_params() {
  std::vector<const Backend*> list;
  for (const Backend& b : backends()) list.push_back(&b);
  return list;
}

// The first statement of a test of an op family the backend may lack.
#define SFT_SKIP_WITHOUT_KERNEL(op)                   \
  if (!::sft::conformance::has_kernel(backend(), op)) \
  GTEST_SKIP() << "no " << backend().name << " kernel for " << op << " yet (docs/cuda.md)"

// Declares the fixture `Suite` and runs its TEST_Ps on every backend.
#define SFT_CONFORMANCE_SUITE(Suite)                                                 \
  class Suite : public ::sft::conformance::BackendTest {};                           \
  INSTANTIATE_TEST_SUITE_P(                                                          \
      , Suite, ::testing::ValuesIn(::sft::conformance::backend_params()),            \
      [](const ::testing::TestParamInfo<const ::sft::conformance::Backend*>& info) { \
        return std::string(info.param->name);                                        \
      })

// How one run computes: dtype is kF32, kBF16 (bf16 operands where the op takes them) or kF64
// (the reference); grid is the dtype (kF32 or kBF16) whose values every input holds.
struct Mode {
  DType dtype = DType::kF32;
  DType grid = DType::kF32;
  bool reference() const { return dtype == DType::kF64; }
};

// The scale of the random starting values of += outputs (2⁻¹⁰: products stay exact on every grid).
inline constexpr double kAccumulateStart = 0x1p-10;

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

inline double round_to(double x, DType grid) {
  if (grid == DType::kBF16) return bf16_to_f32(f32_to_bf16(static_cast<float>(x)));
  if (grid == DType::kF32) return static_cast<float>(x);
  return x;
}

// n normal values · scale, rounded to the grid; stream separates the tensors of one case.
inline Values random_values(size_t n, uint64_t stream, double scale, DType grid) {
  Rng rng(20260101, stream);
  Values v(n);
  for (double& x : v) x = round_to(rng.normal() * scale, grid);
  return v;
}

// A (rows, cols) tensor of one dtype in one backend's memory, holding the given values.
class Buffer {
 public:
  Buffer(const Backend& backend, DType dtype, int64_t rows, int64_t cols, const Values& values)
      : backend_(backend), dtype_(dtype), rows_(rows), cols_(cols) {
    const size_t n = static_cast<size_t>(rows * cols);
    if (values.size() != n)
      throw std::invalid_argument("test buffer of " + std::to_string(n) + " elements given " +
                                  std::to_string(values.size()) + " values");
    bytes_ = std::max<size_t>(1, n * dtype_size(dtype));
    data_ = backend.allocate(bytes_);
    std::vector<unsigned char> host(bytes_);
    for (size_t i = 0; i < n; ++i) {
      if (dtype == DType::kF64)
        reinterpret_cast<double*>(host.data())[i] = values[i];
      else if (dtype == DType::kF32)
        reinterpret_cast<float*>(host.data())[i] = static_cast<float>(values[i]);
      else if (dtype == DType::kBF16)
        reinterpret_cast<uint16_t*>(host.data())[i] = f32_to_bf16(static_cast<float>(values[i]));
      else
        ADD_FAILURE() << "no test buffers of " << dtype_name(dtype);
    }
    backend.upload(data_, host.data(), bytes_);
  }
  ~Buffer() { backend_.release(data_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  View view() const { return View{data_, dtype_, rows_, cols_, backend_.device}; }

  Values read() const {
    std::vector<unsigned char> host(bytes_);
    backend_.download(host.data(), data_, bytes_);
    Values out(static_cast<size_t>(rows_ * cols_));
    for (size_t i = 0; i < out.size(); ++i) {
      if (dtype_ == DType::kF64)
        out[i] = reinterpret_cast<const double*>(host.data())[i];
      else if (dtype_ == DType::kF32)
        out[i] = reinterpret_cast<const float*>(host.data())[i];
      else
        out[i] = bf16_to_f32(reinterpret_cast<const uint16_t*>(host.data())[i]);
    }
    return out;
  }

 private:
  const Backend& backend_;
  DType dtype_;
  int64_t rows_, cols_;
  size_t bytes_ = 0;
  void* data_ = nullptr;
};

// Token ids (or targets) in a backend's memory.
class IdBuffer {
 public:
  IdBuffer(const Backend& backend, const std::vector<int64_t>& ids) : backend_(backend) {
    bytes_ = std::max<size_t>(1, ids.size() * sizeof(int64_t));
    data_ = backend.allocate(bytes_);
    if (!ids.empty()) backend.upload(data_, ids.data(), ids.size() * sizeof(int64_t));
  }
  ~IdBuffer() { backend_.release(data_); }
  IdBuffer(const IdBuffer&) = delete;
  IdBuffer& operator=(const IdBuffer&) = delete;
  const int64_t* data() const { return static_cast<const int64_t*>(data_); }

 private:
  const Backend& backend_;
  size_t bytes_ = 0;
  void* data_ = nullptr;
};

using Outputs = std::vector<std::pair<std::string, Values>>;
using RunFn = std::function<Outputs(const Backend&, Mode)>;
// The tolerance of one output when the op runs in `tested` (relative to the output's max |ref|).
using TolFn = std::function<double(DType tested, const std::string& output)>;

inline bool bit_identical(const Values& a, const Values& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

// max |got − ref| / max |ref| (absolute when ref is all zeros); infinity on NaN or size mismatch.
inline double relative_error(const Values& got, const Values& ref) {
  if (got.size() != ref.size()) return std::numeric_limits<double>::infinity();
  double diff = 0, mag = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (std::isnan(got[i]) || std::isnan(ref[i])) return std::numeric_limits<double>::infinity();
    diff = std::max(diff, std::abs(got[i] - ref[i]));
    mag = std::max(mag, std::abs(ref[i]));
  }
  return mag > 0 ? diff / mag : diff;
}

// Runs `run` on the backend in every tested dtype and compares with the f64 CPU run.
inline void check_conformance(const Backend& backend, const std::string& what, const RunFn& run,
                              std::initializer_list<DType> tested, const TolFn& tol) {
  for (DType dt : tested) {
    SCOPED_TRACE(what + " on " + backend.name + " in " + std::string(dtype_name(dt)));
    const Outputs got = run(backend, {dt, dt});
    const Outputs again = run(backend, {dt, dt});
    const Outputs ref = run(reference_backend(), {DType::kF64, dt});
    ASSERT_EQ(got.size(), ref.size());
    for (size_t i = 0; i < ref.size(); ++i) {
      ASSERT_EQ(got[i].first, ref[i].first);
      const double err = relative_error(got[i].second, ref[i].second);
      const double limit = tol(dt, ref[i].first);
      EXPECT_LE(err, limit) << "output " << ref[i].first << " of " << what;
      if (std::getenv("SFT_CONFORMANCE_REPORT"))  // the measured errors, for choosing tolerances
        std::printf("%s | %s | %s | %s | %.3g | %.3g\n", what.c_str(), backend.name,
                    std::string(dtype_name(dt)).c_str(), ref[i].first.c_str(), err, limit);
      EXPECT_TRUE(bit_identical(got[i].second, again[i].second))
          << "output " << ref[i].first << " of " << what << " differs between reruns";
    }
  }
}

// A tolerance that is the same for every output of an op.
inline TolFn uniform_tolerance(double f32, double bf16 = 0) {
  return [=](DType dt, const std::string&) { return dt == DType::kBF16 ? bf16 : f32; };
}

// ---- float64 finite differences ---------------------------------------------------------
using test::dot;
using test::fd_error;
using test::kFdTolerance;

// What a += output gained: after − before (the gradient checks start += outputs from random
// values, so a kernel that overwrites instead of accumulating fails them).
inline Values gained(const Values& after, const Values& before) {
  Values d(after.size());
  for (size_t i = 0; i < d.size(); ++i) d[i] = after[i] - before[i];
  return d;
}

// An f64 CPU view over a host vector (the finite-difference checks run the reference directly).
inline View host_view(Values& v, int64_t rows, int64_t cols) {
  return ops::view_of(v.data(), rows, cols);
}

// Expects fn to throw an sft::Error whose message names `op`.
template <typename F>
void expect_error_naming(const std::string& op, F&& fn) {
  try {
    fn();
    ADD_FAILURE() << op << ": no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(op), std::string::npos)
        << "the error does not name " << op << ": " << e.what();
  }
}

}  // namespace sft::conformance
