// bitsandbytes' blockwise formats. See bnb_quant.h.
#include "ops/cpu/bnb_quant.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"
#include "ops/ops.h"

namespace sft::ops::cpu {

namespace {

// NF4: the 16 quantiles of N(0, 1) scaled to [-1, 1] with an exact zero (QLoRA, section 3);
// FP4: sign, 2 exponent bits, 1 mantissa bit, scaled so the largest is 1. The values are
// bitsandbytes' float32 tables (its `quant_map`), written as hex floats so no digit rounds.
constexpr std::array<float, 16> kNf4 = {
    -0x1p+0f,        -0x1.647362p-1f, -0x1.0cd66p-1f,  -0x1.94654p-2f,
    -0x1.23449ap-2f, -0x1.7a6a7ep-3f, -0x1.74f0e2p-4f, 0x0p+0f,
    0x1.45f5fep-4f,  0x1.4995c6p-3f,  0x1.f809bap-3f,  0x1.5a0674p-2f,
    0x1.c3497p-2f,   0x1.200f56p-1f,  0x1.722766p-1f,  0x1p+0f};
constexpr std::array<float, 16> kFp4 = {
    0x0p+0f,         0x1.555556p-8f, 0x1.555556p-1f,  0x1p+0f,         0x1.555556p-2f,  0x1p-1f,
    0x1.555556p-3f,  0x1p-2f,        0x0p+0f,         -0x1.555556p-8f, -0x1.555556p-1f, -0x1p+0f,
    -0x1.555556p-2f, -0x1p-1f,       -0x1.555556p-3f, -0x1p-2f};

// bitsandbytes quantizes 4-bit by bucketing the scaled value among the midpoints of the
// code sorted ascending (a value on a midpoint goes to the lower bucket), then maps the
// bucket back to the code's own index. FP4 has two zeros (+0 at 0, the "-0" at 8, both 0.0f):
// the sort keeps them in index order, as torch's sort of this table does.
struct SortedCode {
  std::array<float, 15> midpoints{};
  std::array<uint8_t, 16> index{};
};

SortedCode sorted_code(const std::array<float, 16>& code) {
  SortedCode s;
  std::iota(s.index.begin(), s.index.end(), uint8_t{0});
  std::stable_sort(s.index.begin(), s.index.end(),
                   [&](uint8_t a, uint8_t b) { return code[a] < code[b]; });
  for (size_t i = 0; i < 15; ++i) s.midpoints[i] = (code[s.index[i]] + code[s.index[i + 1]]) / 2;
  return s;
}

const SortedCode& sorted_code(Quant4Type type) {
  static const SortedCode nf4 = sorted_code(kNf4), fp4 = sorted_code(kFp4);
  return type == Quant4Type::kNf4 ? nf4 : fp4;
}

uint8_t bucket(const SortedCode& s, float scaled) {
  // The count of midpoints strictly below the value (torch.bucketize, right=False).
  const auto it = std::lower_bound(s.midpoints.begin(), s.midpoints.end(), scaled);
  return s.index[static_cast<size_t>(it - s.midpoints.begin())];
}

// Elements [begin, end) of x, one block: its absmax, and its indices OR-ed into packed (zeroed).
void quantize_block(std::span<const float> x, int64_t begin, int64_t end, int64_t blocksize,
                    const SortedCode& code, std::span<uint8_t> packed, std::span<float> absmax) {
  float amax = 0;
  for (int64_t i = begin; i < end; ++i) amax = std::max(amax, std::fabs(x[static_cast<size_t>(i)]));
  // bitsandbytes scales full blocks by the reciprocal and the short last block by a
  // division; both clamp absmax away from 0 so an all-zero block quantizes to zeros, and the
  // short block stores the clamped value.
  const float safe = std::max(amax, 1e-38f);
  const bool full = end - begin == blocksize;
  absmax[static_cast<size_t>(begin / blocksize)] = full ? amax : safe;
  const float reciprocal = 1.0f / safe;
  for (int64_t i = begin; i < end; ++i) {
    const float v = x[static_cast<size_t>(i)];
    const float scaled = std::clamp(full ? v * reciprocal : v / safe, -1.0f, 1.0f);
    const uint8_t q = bucket(code, scaled);
    packed[static_cast<size_t>(i / 2)] |= i % 2 == 0 ? static_cast<uint8_t>(q << 4) : q;
  }
}

// torch.linspace(start, end, steps) in float32 as its CPU kernel computes it: the first half
// counts up from start, the second half down from end, each a fused multiply-add.
std::vector<float> linspace_f32(float start, float end, int64_t steps) {
  std::vector<float> out(static_cast<size_t>(steps));
  const float step = (end - start) / static_cast<float>(steps - 1);
  const int64_t halfway = steps / 2;
  for (int64_t i = 0; i < steps; ++i)
    out[static_cast<size_t>(i)] = i < halfway
                                      ? std::fma(step, static_cast<float>(i), start)
                                      : std::fma(-step, static_cast<float>(steps - i - 1), end);
  return out;
}

std::array<float, 256> make_signed_dynamic_map() {
  // create_dynamic_map(signed=True, max_exponent_bits=7, total_bits=8): for each exponent
  // 10^-6 … 10^0, 2^i fractions (the midpoints of an even split of [0.1, 1]), both signs;
  // then 0 and 1. 2 × 127 + 2 = 256 values, sorted.
  std::vector<float> data;
  for (int i = 0; i < 7; ++i) {
    const std::vector<float> bounds = linspace_f32(0.1f, 1.0f, (int64_t{1} << i) + 1);
    const auto scale = static_cast<float>(std::pow(10.0, -6 + i));
    for (size_t k = 0; k + 1 < bounds.size(); ++k) {
      const float mean = (bounds[k] + bounds[k + 1]) / 2.0f;
      data.push_back(scale * mean);
      data.push_back(-scale * mean);
    }
  }
  data.push_back(0.0f);
  data.push_back(1.0f);
  std::sort(data.begin(), data.end());
  std::array<float, 256> map{};
  std::copy(data.begin(), data.end(), map.begin());
  return map;
}

void check_sizes(const char* what, size_t got, size_t want) {
  if (got != want)
    fail("bnb", std::string(what) + " holds " + std::to_string(got) + " values, the format needs " +
                    std::to_string(want));
}

void check_blocksize(int64_t blocksize) {
  if (blocksize <= 0) fail("bnb", "blocksize must be positive, got " + std::to_string(blocksize));
}

}  // namespace

std::string_view quant4_type_name(Quant4Type type) {
  return type == Quant4Type::kNf4 ? "nf4" : "fp4";
}

const std::array<float, 16>& quant4_code(Quant4Type type) {
  return type == Quant4Type::kNf4 ? kNf4 : kFp4;
}

const std::array<float, 256>& signed_dynamic_map() {
  static const std::array<float, 256> map = make_signed_dynamic_map();
  return map;
}

int64_t quant_block_count(int64_t n, int64_t blocksize) {
  check_blocksize(blocksize);
  return (n + blocksize - 1) / blocksize;
}

void quantize_4bit(std::span<const float> x, int64_t blocksize, Quant4Type type,
                   std::span<uint8_t> packed, std::span<float> absmax) {
  const auto n = static_cast<int64_t>(x.size());
  check_sizes("absmax", absmax.size(), static_cast<size_t>(quant_block_count(n, blocksize)));
  check_sizes("packed", packed.size(), static_cast<size_t>((n + 1) / 2));
  const SortedCode& code = sorted_code(type);
  std::fill(packed.begin(), packed.end(), uint8_t{0});
  // Blocks are independent; of an even size each owns whole bytes, so they are spread over the
  // pool (the same bytes whatever the thread count). An odd size shares a byte between
  // neighbours: one thread.
  const int64_t blocks = quant_block_count(n, blocksize);
  const auto quantize_blocks = [&](int64_t first_block, int64_t end_block) {
    for (int64_t block = first_block; block < end_block; ++block)
      quantize_block(x, block * blocksize, std::min(n, (block + 1) * blocksize), blocksize, code,
                     packed, absmax);
  };
  if (blocksize % 2 == 0)
    parallel_for_rows(blocks, 64, [&](int64_t b, int64_t e) { quantize_blocks(b, e); });
  else
    quantize_blocks(0, blocks);
  // An odd count pads with a 0.0 scaled value, as bitsandbytes does.
  if (n % 2 == 1) packed[static_cast<size_t>(n / 2)] |= bucket(code, 0.0f);
}

void dequantize_4bit(std::span<const uint8_t> packed, std::span<const float> absmax,
                     int64_t blocksize, Quant4Type type, std::span<float> out) {
  const auto n = static_cast<int64_t>(out.size());
  check_sizes("absmax", absmax.size(), static_cast<size_t>(quant_block_count(n, blocksize)));
  check_sizes("packed", packed.size(), static_cast<size_t>((n + 1) / 2));
  const std::array<float, 16>& code = quant4_code(type);
  for (int64_t i = 0; i < n; ++i) {
    out[static_cast<size_t>(i)] =
        quant4_element(packed.data(), absmax.data(), code.data(), i, blocksize);
  }
}

void quantize_8bit(std::span<const float> x, int64_t blocksize, std::span<const float, 256> code,
                   std::span<uint8_t> out, std::span<float> absmax) {
  const auto n = static_cast<int64_t>(x.size());
  check_sizes("absmax", absmax.size(), static_cast<size_t>(quant_block_count(n, blocksize)));
  check_sizes("codes", out.size(), x.size());
  for (int64_t begin = 0; begin < n; begin += blocksize) {
    const int64_t end = std::min(n, begin + blocksize);
    float amax = 0;
    for (int64_t i = begin; i < end; ++i)
      amax = std::max(amax, std::fabs(x[static_cast<size_t>(i)]));
    absmax[static_cast<size_t>(begin / blocksize)] = amax;
    for (int64_t i = begin; i < end; ++i) {
      // bitsandbytes' CPU kernel: divide, take the code value at or below (the first for a
      // value below the code), then the one above when it is strictly nearer.
      // (An all-zero block, where bitsandbytes would divide by zero, maps to the code nearest 0.)
      const float normed = amax > 0 ? x[static_cast<size_t>(i)] / amax : 0.0f;
      const auto above = std::upper_bound(code.begin(), code.end(), normed);
      size_t idx = above == code.begin() ? 0 : static_cast<size_t>(above - code.begin()) - 1;
      if (idx < 255 && std::fabs(normed - code[idx + 1]) < std::fabs(normed - code[idx])) ++idx;
      out[static_cast<size_t>(i)] = static_cast<uint8_t>(idx);
    }
  }
}

void dequantize_8bit(std::span<const uint8_t> q, std::span<const float> absmax, int64_t blocksize,
                     std::span<const float, 256> code, std::span<float> out) {
  const auto n = static_cast<int64_t>(out.size());
  check_sizes("absmax", absmax.size(), static_cast<size_t>(quant_block_count(n, blocksize)));
  check_sizes("codes", q.size(), out.size());
  for (int64_t i = 0; i < n; ++i)
    out[static_cast<size_t>(i)] =
        code[q[static_cast<size_t>(i)]] * absmax[static_cast<size_t>(i / blocksize)];
}

float absmax_mean(std::span<const float> absmax) {
  double sum = 0;
  for (float a : absmax) sum += a;
  return absmax.empty() ? 0.0f : static_cast<float>(sum / static_cast<double>(absmax.size()));
}

NestedAbsmax nest_absmax(std::span<const float> absmax, float offset) {
  NestedAbsmax nested;
  nested.offset = offset;
  std::vector<float> centred(absmax.begin(), absmax.end());
  for (float& a : centred) a -= nested.offset;
  nested.code = signed_dynamic_map();
  nested.codes.resize(centred.size());
  nested.absmax.resize(static_cast<size_t>(
      quant_block_count(static_cast<int64_t>(centred.size()), nested.blocksize)));
  quantize_8bit(centred, nested.blocksize, nested.code, nested.codes, nested.absmax);
  return nested;
}

void unnest_absmax(const NestedAbsmax& nested, std::span<float> absmax) {
  dequantize_8bit(nested.codes, nested.absmax, nested.blocksize, nested.code, absmax);
  for (float& a : absmax) a += nested.offset;
}

}  // namespace sft::ops::cpu
