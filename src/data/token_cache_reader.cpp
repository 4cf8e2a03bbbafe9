// Reading a token cache (token_cache.h): TokenCache opens the manifest and maps and checks
// every shard, then serves rows zero-copy.
#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>

#include "core/crc32c.h"
#include "core/thread_pool.h"
#include "data/token_cache.h"
#include "data/token_cache_format.h"
#include "io/mapped_file.h"

namespace sft::data {

TokenCache::Shard TokenCache::open_shard(const std::string& path, bool verify_payload) {
  Shard s;
  s.file = MappedFile::open(path);
  const auto bytes = s.file->bytes();
  if (bytes.size() < cache_format::kHeaderSize)
    cache_format::corrupt(
        path, "truncated: " + std::to_string(bytes.size()) + " bytes, shorter than the header");
  cache_format::Header h;
  std::memcpy(&h, bytes.data(), cache_format::kHeaderSize);
  if (std::memcmp(h.magic, cache_format::kMagic, 8) != 0)
    cache_format::corrupt(path, "not a token cache shard (bad magic)");
  if (h.version != kTokenCacheVersion)
    cache_format::corrupt(path, "shard version " + std::to_string(h.version) +
                                    ", this build reads version " +
                                    std::to_string(kTokenCacheVersion));
  if (h.header_size != cache_format::kHeaderSize ||
      h.header_crc != crc32c(bytes.first(cache_format::kHeaderSize - 4)))
    cache_format::corrupt(path, "corrupt header (checksum mismatch)");
  const auto sizes = cache_format::section_sizes(h.rows, h.tokens, h.documents);
  uint64_t expected = cache_format::kHeaderSize;
  for (uint64_t size : sizes) expected += cache_format::pad8(size);
  if (bytes.size() != expected)
    cache_format::corrupt(path,
                          (bytes.size() < expected ? "truncated: " : "unexpected trailing data: ") +
                              std::to_string(bytes.size()) + " bytes, the header describes " +
                              std::to_string(expected));
  std::array<uint64_t, 5> hashes{};
  uint64_t at = cache_format::kHeaderSize;
  std::array<const std::byte*, 5> starts{};
  for (size_t i = 0; i < 5; ++i) {
    starts[i] = bytes.data() + at;
    if (verify_payload) hashes[i] = cache_format::payload_hash(bytes.subspan(at, sizes[i]));
    at += cache_format::pad8(sizes[i]);
  }
  if (verify_payload && cache_format::combine_hashes(hashes) != h.payload_hash)
    cache_format::corrupt(path, "corrupt data (checksum mismatch)");
  s.rows = h.rows;
  s.row_offsets = reinterpret_cast<const uint64_t*>(starts[0]);
  s.input_ids = reinterpret_cast<const int32_t*>(starts[1]);
  s.labels = reinterpret_cast<const int32_t*>(starts[2]);
  s.doc_offsets = reinterpret_cast<const uint64_t*>(starts[3]);
  s.doc_lengths = reinterpret_cast<const int32_t*>(starts[4]);
  // Offsets are checked once here so row() can index without bounds checks.
  if (s.row_offsets[0] != 0 || s.row_offsets[h.rows] != h.tokens || s.doc_offsets[0] != 0 ||
      s.doc_offsets[h.rows] != h.documents)
    cache_format::corrupt(path, "inconsistent row offsets");
  for (uint64_t r = 0; r < h.rows; ++r) {
    if (s.row_offsets[r + 1] < s.row_offsets[r] || s.doc_offsets[r + 1] < s.doc_offsets[r])
      cache_format::corrupt(path, "row offsets decrease at row " + std::to_string(r));
  }
  return s;
}

std::unique_ptr<TokenCache> TokenCache::open_if_complete(const std::string& dir,
                                                         bool verify_payload) {
  const std::string manifest_path = (std::filesystem::path(dir) / cache_format::kManifest).string();
  if (!std::filesystem::exists(manifest_path)) return nullptr;
  Json manifest = read_json_file(manifest_path, "cache");
  auto cache = std::unique_ptr<TokenCache>(new TokenCache());
  try {
    if (manifest.at("format") != "sft-token-cache" ||
        manifest.at("version").get<uint32_t>() != kTokenCacheVersion)
      cache_format::corrupt(manifest_path, "not a token cache manifest of version " +
                                               std::to_string(kTokenCacheVersion));
    const Json& shards = manifest.at("shards");
    std::vector<std::string> paths;
    for (const Json& s : shards)
      paths.push_back((std::filesystem::path(dir) / s.at("file").get<std::string>()).string());
    cache->shards_.resize(paths.size());
    // Checksumming is the cost of opening; shards are independent, so all cores share it.
    default_thread_pool().parallel_for(paths.size(), [&](size_t, size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) cache->shards_[i] = open_shard(paths[i], verify_payload);
    });
    for (size_t i = 0; i < paths.size(); ++i) {
      Shard& s = cache->shards_[i];
      if (s.rows != shards[i].at("rows").get<uint64_t>())
        cache_format::corrupt(paths[i], "holds " + std::to_string(s.rows) +
                                            " rows, the manifest says " +
                                            shards[i].at("rows").dump());
      s.first_row = cache->num_rows_;
      cache->num_rows_ += s.rows;
      cache->num_tokens_ += s.row_offsets[s.rows];
    }
    if (cache->num_rows_ != manifest.at("rows").get<uint64_t>())
      cache_format::corrupt(manifest_path, "row count does not match its shards");
    cache->metadata_ = manifest.at("metadata");
  } catch (const Json::exception& e) {
    cache_format::corrupt(manifest_path, std::string("malformed manifest: ") + e.what());
  }
  return cache;
}

const TokenCache::Shard& TokenCache::shard_of(size_t& i) const {
  auto it = std::upper_bound(shards_.begin(), shards_.end(), i,
                             [](size_t row, const Shard& s) { return row < s.first_row; });
  const Shard& s = *(it - 1);
  i -= s.first_row;
  return s;
}

TokenRow TokenCache::row(size_t i) const {
  const Shard& s = shard_of(i);
  const uint64_t b = s.row_offsets[i], n = s.row_offsets[i + 1] - b;
  return {{s.input_ids + b, n}, {s.labels + b, n}};
}

std::span<const int32_t> TokenCache::doc_lengths(size_t i) const {
  const Shard& s = shard_of(i);
  return {s.doc_lengths + s.doc_offsets[i], s.doc_offsets[i + 1] - s.doc_offsets[i]};
}

}  // namespace sft::data
