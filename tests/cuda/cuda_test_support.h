// Support for the CUDA kernel tests (tests/cuda): skipping without a device, tensors in device
// memory made from host values, the fp64 CPU reference on the same values, and the two checks
// every test makes — the error against the reference (max |got − ref| / max |ref|, as
// tests/conformance) and bit-identical outputs across two runs.
//
// Inputs come from fixed Rng streams rounded to the tested grid (f32 or bf16), so the f64
// reference sees exactly the values the kernel sees. Outputs the kernel overwrites start as NaN
// (a kernel that skips an element fails); outputs it accumulates into start from small values.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/half.h"
#include "core/rng.h"
#include "ops/backend.h"
#include "ops/cuda/cuda_memory.h"
#include "ops/view.h"

// The first statement of every test that needs a GPU.
#define SFT_SKIP_WITHOUT_CUDA() \
  if (!::sft::cuda_available()) GTEST_SKIP() << "no CUDA device"

namespace sft::cuda_test {

using ops::View;
using Values = std::vector<double>;

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

inline double round_to(double x, DType grid) {
  if (grid == DType::kBF16) return bf16_to_f32(f32_to_bf16(static_cast<float>(x)));
  if (grid == DType::kF32) return static_cast<float>(x);
  return x;
}

// n normal values · scale (+ offset), rounded to the grid; stream separates the tensors.
inline Values random_values(size_t n, uint64_t stream, double scale, DType grid = DType::kF32,
                            double offset = 0) {
  Rng rng(20261201, stream);
  Values v(n);
  for (double& x : v) x = round_to(offset + rng.normal() * scale, grid);
  return v;
}

inline Values filled(size_t n, double value) {
  return Values(n, value);
}

// Host bytes of `values` as dtype (f64, f32 or bf16 bits).
inline std::vector<unsigned char> encode(const Values& values, DType dtype) {
  std::vector<unsigned char> bytes(std::max<size_t>(1, values.size() * dtype_size(dtype)));
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::kF64)
      reinterpret_cast<double*>(bytes.data())[i] = values[i];
    else if (dtype == DType::kF32)
      reinterpret_cast<float*>(bytes.data())[i] = static_cast<float>(values[i]);
    else
      reinterpret_cast<uint16_t*>(bytes.data())[i] = f32_to_bf16(static_cast<float>(values[i]));
  }
  return bytes;
}

inline Values decode(const unsigned char* bytes, size_t n, DType dtype) {
  Values v(n);
  for (size_t i = 0; i < n; ++i) {
    if (dtype == DType::kF64)
      v[i] = reinterpret_cast<const double*>(bytes)[i];
    else if (dtype == DType::kF32)
      v[i] = reinterpret_cast<const float*>(bytes)[i];
    else
      v[i] = bf16_to_f32(reinterpret_cast<const uint16_t*>(bytes)[i]);
  }
  return v;
}

// A (rows, cols) tensor in device memory.
class DeviceTensor {
 public:
  DeviceTensor(DType dtype, int64_t rows, int64_t cols, const Values& values)
      : dtype_(dtype), rows_(rows), cols_(cols) {
    EXPECT_EQ(values.size(), static_cast<size_t>(rows * cols));
    arena_.reserve(std::max<size_t>(1, static_cast<size_t>(rows * cols) * dtype_size(dtype)));
    const auto bytes = encode(values, dtype);
    ops::cuda::copy_to_device(arena_.data(), bytes.data(), values.size() * dtype_size(dtype));
  }
  View view() const { return View{arena_.data(), dtype_, rows_, cols_, Device::kCuda}; }
  // Waits for the kernels before it, then reads the values back widened to double.
  Values read() const {
    const size_t n = static_cast<size_t>(rows_ * cols_);
    std::vector<unsigned char> bytes(std::max<size_t>(1, n * dtype_size(dtype_)));
    ops::cuda::synchronize();
    ops::cuda::copy_to_host(bytes.data(), arena_.data(), n * dtype_size(dtype_));
    return decode(bytes.data(), n, dtype_);
  }

 private:
  DType dtype_;
  int64_t rows_, cols_;
  Arena arena_{cuda_allocator()};
};

// Token ids in device memory.
class DeviceIds {
 public:
  explicit DeviceIds(const std::vector<int64_t>& ids) {
    arena_.reserve(std::max<size_t>(1, ids.size() * sizeof(int64_t)));
    ops::cuda::copy_to_device(arena_.data(), ids.data(), ids.size() * sizeof(int64_t));
  }
  const int64_t* data() const { return reinterpret_cast<const int64_t*>(arena_.data()); }

 private:
  Arena arena_{cuda_allocator()};
};

// A (rows, cols) tensor on the CPU, in f64 (the reference) or f32 (the CPU kernel).
class HostTensor {
 public:
  HostTensor(DType dtype, int64_t rows, int64_t cols, const Values& values)
      : dtype_(dtype), rows_(rows), cols_(cols), bytes_(encode(values, dtype)) {}
  View view() { return View{bytes_.data(), dtype_, rows_, cols_, Device::kCpu}; }
  Values read() const { return decode(bytes_.data(), static_cast<size_t>(rows_ * cols_), dtype_); }

 private:
  DType dtype_;
  int64_t rows_, cols_;
  std::vector<unsigned char> bytes_;
};

// max |got − ref| / max |ref| (0 when both are all zero); NaN anywhere in got is an error of ∞.
inline double relative_error(const Values& got, const Values& ref) {
  EXPECT_EQ(got.size(), ref.size());
  double err = 0, scale = 0;
  for (size_t i = 0; i < got.size() && i < ref.size(); ++i) {
    if (std::isnan(got[i]) != std::isnan(ref[i])) return std::numeric_limits<double>::infinity();
    if (std::isnan(ref[i])) continue;
    err = std::max(err, std::abs(got[i] - ref[i]));
    scale = std::max(scale, std::abs(ref[i]));
  }
  return scale == 0 ? err : err / scale;
}

// The same bits (values are widened f32/bf16, so equal doubles mean equal bits).
inline bool same_bits(const Values& a, const Values& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

// Runs `run` (→ std::vector<Values>, one per output) twice and expects identical bits.
template <typename Run>
std::vector<Values> run_twice(Run&& run) {
  const std::vector<Values> first = run(), second = run();
  EXPECT_EQ(first.size(), second.size());
  for (size_t i = 0; i < first.size() && i < second.size(); ++i)
    EXPECT_TRUE(same_bits(first[i], second[i])) << "output " << i << " differs between two runs";
  return first;
}

// Expects fn to throw an sft::Error whose message contains `what`.
template <typename F>
void expect_error(const std::string& what, F&& fn) {
  try {
    fn();
    ADD_FAILURE() << what << ": no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

}  // namespace sft::cuda_test
