// The token cache's on-disk layout, shared by its writer (token_cache_writer.cpp) and reader
// (token_cache_reader.cpp) and by nothing else: the shard header, the section sizes and
// padding, the payload checksum, the manifest's file name and the error for a bad file.
// token_cache.h describes the format; this is the code that both sides must agree on.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

static_assert(std::endian::native == std::endian::little,
              "the token cache format is little-endian and read zero-copy");

namespace sft::data::cache_format {

inline constexpr char kMagic[8] = {'S', 'F', 'T', 'T', 'O', 'K', 'C', '\n'};
inline constexpr size_t kHeaderSize = 64;
inline constexpr const char* kManifest = "manifest.json";

struct Header {
  char magic[8];
  uint32_t version;
  uint32_t header_size;
  uint64_t rows;
  uint64_t tokens;
  uint64_t documents;
  uint64_t payload_hash;
  uint8_t reserved[12];
  uint32_t header_crc;  // of the 60 bytes before it
};
static_assert(sizeof(Header) == kHeaderSize);

inline uint64_t pad8(uint64_t bytes) {
  return (bytes + 7) / 8 * 8;
}

// Section sizes in bytes without padding, in file order (each is padded to 8 in the file).
inline std::array<uint64_t, 5> section_sizes(uint64_t rows, uint64_t tokens, uint64_t docs) {
  return {(rows + 1) * 8, tokens * 4, tokens * 4, (rows + 1) * 8, docs * 4};
}

// The checksum of one section's bytes (padding excluded).
uint64_t payload_hash(std::span<const std::byte> data);
// The header's payload checksum: a hash of the five sections' hashes.
uint64_t combine_hashes(const std::array<uint64_t, 5>& hashes);

// Throws "[cache] <file>: <problem> (hint: delete the cache folder ...)".
[[noreturn]] void corrupt(const std::string& file, const std::string& problem);

}  // namespace sft::data::cache_format
