// The token cache: prepared training rows stored as memory-mapped binary shards, so a
// second run with the same inputs skips preparation and reads rows zero-copy.
//
// Layout: <cache_dir>/<fingerprint>/shard-NNNNN.bin ... + manifest.json. Every shard is
// written to a temp file and renamed; manifest.json (the shard list, row/token counts and the
// caller's metadata, e.g. the preparation report) is written last, also atomically, so a
// folder without a manifest is an unfinished cache that is rebuilt, never read.
//
// Shard format (little-endian, every section 8-byte aligned):
//   header (64 bytes): magic "SFTTOKC\n", u32 version, u32 header size, u64 rows, u64 tokens,
//     u64 documents, u64 payload checksum, 12 reserved bytes, u32 crc32c of the 60 before it
//   u64 row_offsets[rows + 1]    token offset of each row (first 0, last = tokens)
//   i32 input_ids[tokens]        (padded to 8 bytes)
//   i32 labels[tokens]           -100 = not trained (padded to 8 bytes)
//   u64 doc_offsets[rows + 1]    offset of each row's first document length
//   i32 doc_lengths[documents]   per row, summing to its length (one per row when unpacked)
// The payload checksum is a fast 64-bit multiply-mix hash (token_cache_format.cpp) of the five
// sections' hashes (padding excluded); opening checks magic, version, header crc, the file
// size the header implies, the payload checksum and the offsets, so a truncated or corrupt
// shard is an error naming the file, never garbage rows.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "data/pack.h"
#include "io/json.h"

namespace sft {
class MappedFile;
}

namespace sft::data {

// A hash of everything that determines a cache's content. Fields are length-prefixed and
// named, so ("ab","c") and ("a","bc") differ. 128 bits (two independent 64-bit FNV-style
// lanes): a key for cache folders, not a cryptographic digest.
class Fingerprint {
 public:
  void add(std::string_view name, std::string_view value);
  void add_int(std::string_view name, int64_t value);
  // Path, size and modification time (ns) — cheap for large dataset files.
  void add_file_identity(const std::string& path);
  // The file's bytes (tokenizer, template); a missing file is hashed as absent.
  void add_file_contents(std::string_view name, const std::string& path);
  std::string hex() const;  // 32 lowercase hex digits

 private:
  void mix(std::string_view bytes);
  uint64_t a_ = 0xcbf29ce484222325ull, b_ = 0x84222325cbf29ce4ull;
};

// Rows in memory in the shard's layout (also the in-memory prepared dataset).
struct RowStore {
  std::vector<uint64_t> row_offsets{0};
  std::vector<int32_t> input_ids, labels;
  std::vector<uint64_t> doc_offsets{0};
  std::vector<int32_t> doc_lengths;

  size_t num_rows() const { return row_offsets.size() - 1; }
  uint64_t num_tokens() const { return input_ids.size(); }
  // Appends a row; empty doc_lengths = one document of the row's length.
  void append(const TokenRow& row, std::span<const int32_t> docs = {});
  TokenRow row(size_t i) const;
  std::span<const int32_t> docs(size_t i) const;
  void clear();
};

// Part of the preparation fingerprint too, so a build with another format uses another folder.
constexpr uint32_t kTokenCacheVersion = 2;

// Writes one cache folder. Rows go to shards of about shard_tokens tokens each.
class TokenCacheWriter {
 public:
  explicit TokenCacheWriter(std::string dir, uint64_t shard_tokens = uint64_t(1) << 25);
  void append(const TokenRow& row, std::span<const int32_t> docs = {});
  // Flushes the last shard and writes manifest.json with `metadata` stored under "metadata".
  void finish(const Json& metadata);

  uint64_t rows() const { return rows_; }

 private:
  void flush_shard();

  std::string dir_;
  uint64_t shard_tokens_;
  RowStore pending_;
  Json shards_ = Json::array();
  uint64_t rows_ = 0, tokens_ = 0;
};

// Writes `store` as one shard file (atomically).
void write_token_shard(const std::string& path, const RowStore& store);

// An opened cache folder: rows borrowed from the memory-mapped shards.
class TokenCache {
 public:
  // nullopt when `dir` holds no manifest.json (no cache, or an unfinished one). Throws
  // "[cache] <file>: ..." for a manifest or shard that is corrupt, truncated or of another
  // version (hint: delete the folder).
  // verify_payload = false skips the data checksums (for a cache this process just wrote).
  static std::unique_ptr<TokenCache> open_if_complete(const std::string& dir,
                                                      bool verify_payload = true);

  size_t num_rows() const { return num_rows_; }
  uint64_t num_tokens() const { return num_tokens_; }
  TokenRow row(size_t i) const;
  std::span<const int32_t> doc_lengths(size_t i) const;
  const Json& metadata() const { return metadata_; }

 private:
  struct Shard {
    std::shared_ptr<const MappedFile> file;
    uint64_t first_row = 0, rows = 0;
    const uint64_t* row_offsets = nullptr;
    const int32_t* input_ids = nullptr;
    const int32_t* labels = nullptr;
    const uint64_t* doc_offsets = nullptr;
    const int32_t* doc_lengths = nullptr;
  };
  static Shard open_shard(const std::string& path, bool verify_payload);
  const Shard& shard_of(size_t& i) const;

  std::vector<Shard> shards_;
  size_t num_rows_ = 0;
  uint64_t num_tokens_ = 0;
  Json metadata_;
};

}  // namespace sft::data
