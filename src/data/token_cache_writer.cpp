// Writing a token cache (token_cache.h): one shard file, and TokenCacheWriter, which cuts
// rows into shards and writes manifest.json last.
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/crc32c.h"
#include "core/error.h"
#include "data/token_cache.h"
#include "data/token_cache_format.h"
#include "io/atomic_file.h"

namespace sft::data {

namespace {

template <typename T>
std::span<const std::byte> bytes_of(const std::vector<T>& v) {
  return std::as_bytes(std::span<const T>(v));
}

}  // namespace

void write_token_shard(const std::string& path, const RowStore& store) {
  const uint64_t rows = store.num_rows(), tokens = store.num_tokens(),
                 docs = store.doc_lengths.size();
  const auto sizes = cache_format::section_sizes(rows, tokens, docs);
  const std::array<std::span<const std::byte>, 5> sections = {
      bytes_of(store.row_offsets), bytes_of(store.input_ids), bytes_of(store.labels),
      bytes_of(store.doc_offsets), bytes_of(store.doc_lengths)};
  static const std::array<std::byte, 8> kZeros{};
  // The checksum covers each section without its zero padding.
  std::array<uint64_t, 5> hashes{};
  for (size_t s = 0; s < 5; ++s) hashes[s] = cache_format::payload_hash(sections[s]);
  cache_format::Header h{};
  std::memcpy(h.magic, cache_format::kMagic, 8);
  h.version = kTokenCacheVersion;
  h.header_size = cache_format::kHeaderSize;
  h.rows = rows;
  h.tokens = tokens;
  h.documents = docs;
  h.payload_hash = cache_format::combine_hashes(hashes);
  h.header_crc = crc32c({reinterpret_cast<const std::byte*>(&h), cache_format::kHeaderSize - 4});

  AtomicFile out(path);
  out.write({reinterpret_cast<const std::byte*>(&h), cache_format::kHeaderSize});
  for (size_t s = 0; s < 5; ++s) {
    out.write(sections[s]);
    out.write(std::span(kZeros).first(cache_format::pad8(sizes[s]) - sizes[s]));
  }
  out.commit();
}

TokenCacheWriter::TokenCacheWriter(std::string dir, uint64_t shard_tokens)
    : dir_(std::move(dir)), shard_tokens_(std::max<uint64_t>(shard_tokens, 1)) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) fail("cache", "cannot create the cache folder '" + dir_ + "': " + ec.message());
  // A manifest from an earlier run would describe shards we are about to replace.
  std::filesystem::remove(std::filesystem::path(dir_) / cache_format::kManifest, ec);
}

void TokenCacheWriter::append(const TokenRow& row, std::span<const int32_t> docs) {
  pending_.append(row, docs);
  ++rows_;
  tokens_ += row.input_ids.size();
  if (pending_.num_tokens() >= shard_tokens_) flush_shard();
}

void TokenCacheWriter::flush_shard() {
  if (pending_.num_rows() == 0) return;
  char name[32];
  std::snprintf(name, sizeof name, "shard-%05zu.bin", shards_.size());
  write_token_shard((std::filesystem::path(dir_) / name).string(), pending_);
  shards_.push_back(
      {{"file", name}, {"rows", pending_.num_rows()}, {"tokens", pending_.num_tokens()}});
  pending_.clear();
}

void TokenCacheWriter::finish(const Json& metadata) {
  flush_shard();
  Json manifest = {{"format", "sft-token-cache"},
                   {"version", kTokenCacheVersion},
                   {"rows", rows_},
                   {"tokens", tokens_},
                   {"shards", shards_},
                   {"metadata", metadata}};
  write_file_atomically((std::filesystem::path(dir_) / cache_format::kManifest).string(),
                        manifest.dump(1) + "\n");
}

}  // namespace sft::data
