// The token cache's payload checksum and its error for a corrupt file (token_cache_format.h).
#include "data/token_cache_format.h"

#include <cstring>

#include "core/error.h"

namespace sft::data::cache_format {

namespace {
constexpr const char* kHint = "delete the cache folder (or pass another --cache_dir) to rebuild it";
}  // namespace

// Four independent multiply-xorshift lanes over 8-byte words. Not crc32c, whose byte-table
// loop runs at ~0.4 GB/s and made opening a cache cost seconds; this runs near memory speed.
// Each step is a bijection of a lane's state, so any change to one word changes the result;
// the length is mixed in so trailing zeros count.
uint64_t payload_hash(std::span<const std::byte> data) {
  constexpr uint64_t kPrime = 0x9e3779b97f4a7c15ull;
  uint64_t lanes[4] = {0x243f6a8885a308d3ull, 0x13198a2e03707344ull, 0xa4093822299f31d0ull,
                       0x082efa98ec4e6c89ull};
  auto step = [](uint64_t lane, uint64_t word) {
    lane = (lane ^ word) * kPrime;
    return lane ^ (lane >> 29);
  };
  const size_t words = data.size() / 8;
  const std::byte* p = data.data();
  size_t i = 0;
  for (; i + 4 <= words; i += 4) {
    uint64_t w[4];
    std::memcpy(w, p + i * 8, 32);
    for (int l = 0; l < 4; ++l) lanes[l] = step(lanes[l], w[l]);
  }
  for (; i < words; ++i) {
    uint64_t w;
    std::memcpy(&w, p + i * 8, 8);
    lanes[i % 4] = step(lanes[i % 4], w);
  }
  uint64_t tail = 0;
  std::memcpy(&tail, p + words * 8, data.size() - words * 8);
  uint64_t h = step(lanes[0], tail);
  for (int l = 1; l < 4; ++l) h = step(h, lanes[l]);
  return step(h, data.size());
}

uint64_t combine_hashes(const std::array<uint64_t, 5>& hashes) {
  return payload_hash(std::as_bytes(std::span<const uint64_t>(hashes)));
}

void corrupt(const std::string& file, const std::string& problem) {
  fail_in_file("cache", {file, ""}, problem, kHint);
}

}  // namespace sft::data::cache_format
