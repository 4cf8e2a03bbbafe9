// Token cache shards and manifest (see token_cache.h for the format).
#include "data/token_cache.h"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/crc32c.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "io/atomic_file.h"
#include "io/mapped_file.h"

static_assert(std::endian::native == std::endian::little,
              "the token cache format is little-endian and read zero-copy");

namespace sft::data {

namespace {

constexpr char kMagic[8] = {'S', 'F', 'T', 'T', 'O', 'K', 'C', '\n'};
constexpr size_t kHeaderSize = 64;
constexpr const char* kManifest = "manifest.json";
constexpr const char* kHint = "delete the cache folder (or pass another --cache_dir) to rebuild it";

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

uint64_t pad8(uint64_t bytes) {
  return (bytes + 7) / 8 * 8;
}

// Section sizes in bytes without padding, in file order (each is padded to 8 in the file).
std::array<uint64_t, 5> section_sizes(uint64_t rows, uint64_t tokens, uint64_t docs) {
  return {(rows + 1) * 8, tokens * 4, tokens * 4, (rows + 1) * 8, docs * 4};
}

template <typename T>
std::span<const std::byte> bytes_of(const std::vector<T>& v) {
  return std::as_bytes(std::span<const T>(v));
}

// The payload checksum: four independent multiply-xorshift lanes over 8-byte words. Not
// crc32c, whose byte-table loop runs at ~0.4 GB/s and made opening a cache cost seconds;
// this runs near memory speed. Each step is a bijection of a lane's state, so any change to
// one word changes the result; the length is mixed in so trailing zeros count.
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

[[noreturn]] void corrupt(const std::string& file, const std::string& problem) {
  fail_in_file("cache", {file, ""}, problem, kHint);
}

uint64_t lane_step(uint64_t h, uint8_t byte, uint64_t prime) {
  return (h ^ byte) * prime;
}

}  // namespace

// ---- Fingerprint ----

void Fingerprint::mix(std::string_view bytes) {
  constexpr uint64_t kPrimeA = 0x100000001b3ull;  // FNV-1a 64
  constexpr uint64_t kPrimeB = 0x9e3779b97f4a7c15ull | 1;
  uint64_t a = a_, b = b_;
  for (unsigned char c : bytes) {
    a = lane_step(a, c, kPrimeA);
    b = lane_step(b, c, kPrimeB);
    b ^= b >> 29;  // extra diffusion so lane b is not a plain FNV with another prime
  }
  a_ = a, b_ = b;
}

void Fingerprint::add(std::string_view name, std::string_view value) {
  auto length = [&](uint64_t n) {
    char buf[8];
    std::memcpy(buf, &n, 8);
    mix({buf, 8});
  };
  length(name.size());
  mix(name);
  length(value.size());
  mix(value);
}

void Fingerprint::add_int(std::string_view name, int64_t value) {
  add(name, std::to_string(value));
}

void Fingerprint::add_file_identity(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    fail_in_file("cache", {path, ""}, "cannot stat: " + errno_text(errno), "check the path");
  std::string identity = std::filesystem::absolute(path).lexically_normal().string();
  identity += "|" + std::to_string(st.st_size) + "|" + std::to_string(st.st_mtim.tv_sec) + "." +
              std::to_string(st.st_mtim.tv_nsec);
  add("file", identity);
}

void Fingerprint::add_file_contents(std::string_view name, const std::string& path) {
  if (!std::filesystem::exists(path)) {
    add(name, "<absent>");
    return;
  }
  auto file = MappedFile::open(path);
  auto bytes = file->bytes();
  add(name, {reinterpret_cast<const char*>(bytes.data()), bytes.size()});
}

std::string Fingerprint::hex() const {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", (unsigned long long)a_, (unsigned long long)b_);
  return buf;
}

// ---- RowStore ----

void RowStore::append(const TokenRow& row, std::span<const int32_t> docs) {
  input_ids.insert(input_ids.end(), row.input_ids.begin(), row.input_ids.end());
  labels.insert(labels.end(), row.labels.begin(), row.labels.end());
  row_offsets.push_back(input_ids.size());
  if (docs.empty())
    doc_lengths.push_back(static_cast<int32_t>(row.input_ids.size()));
  else
    doc_lengths.insert(doc_lengths.end(), docs.begin(), docs.end());
  doc_offsets.push_back(doc_lengths.size());
}

TokenRow RowStore::row(size_t i) const {
  const uint64_t b = row_offsets[i], n = row_offsets[i + 1] - b;
  return {{input_ids.data() + b, n}, {labels.data() + b, n}};
}

std::span<const int32_t> RowStore::docs(size_t i) const {
  return {doc_lengths.data() + doc_offsets[i], doc_offsets[i + 1] - doc_offsets[i]};
}

void RowStore::clear() {
  *this = RowStore{};
}

// ---- writing ----

void write_token_shard(const std::string& path, const RowStore& store) {
  const uint64_t rows = store.num_rows(), tokens = store.num_tokens(),
                 docs = store.doc_lengths.size();
  const auto sizes = section_sizes(rows, tokens, docs);
  const std::array<std::span<const std::byte>, 5> sections = {
      bytes_of(store.row_offsets), bytes_of(store.input_ids), bytes_of(store.labels),
      bytes_of(store.doc_offsets), bytes_of(store.doc_lengths)};
  static const std::array<std::byte, 8> kZeros{};
  // The checksum covers each section without its zero padding.
  std::array<uint64_t, 5> hashes{};
  for (size_t s = 0; s < 5; ++s) hashes[s] = payload_hash(sections[s]);
  Header h{};
  std::memcpy(h.magic, kMagic, 8);
  h.version = kTokenCacheVersion;
  h.header_size = kHeaderSize;
  h.rows = rows;
  h.tokens = tokens;
  h.documents = docs;
  h.payload_hash = combine_hashes(hashes);
  h.header_crc = crc32c({reinterpret_cast<const std::byte*>(&h), kHeaderSize - 4});

  AtomicFile out(path);
  out.write({reinterpret_cast<const std::byte*>(&h), kHeaderSize});
  for (size_t s = 0; s < 5; ++s) {
    out.write(sections[s]);
    out.write(std::span(kZeros).first(pad8(sizes[s]) - sizes[s]));
  }
  out.commit();
}

TokenCacheWriter::TokenCacheWriter(std::string dir, uint64_t shard_tokens)
    : dir_(std::move(dir)), shard_tokens_(std::max<uint64_t>(shard_tokens, 1)) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) fail("cache", "cannot create the cache folder '" + dir_ + "': " + ec.message());
  // A manifest from an earlier run would describe shards we are about to replace.
  std::filesystem::remove(std::filesystem::path(dir_) / kManifest, ec);
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
  write_file_atomically((std::filesystem::path(dir_) / kManifest).string(),
                        manifest.dump(1) + "\n");
}

// ---- reading ----

TokenCache::Shard TokenCache::open_shard(const std::string& path, bool verify_payload) {
  Shard s;
  s.file = MappedFile::open(path);
  const auto bytes = s.file->bytes();
  if (bytes.size() < kHeaderSize)
    corrupt(path, "truncated: " + std::to_string(bytes.size()) + " bytes, shorter than the header");
  Header h;
  std::memcpy(&h, bytes.data(), kHeaderSize);
  if (std::memcmp(h.magic, kMagic, 8) != 0) corrupt(path, "not a token cache shard (bad magic)");
  if (h.version != kTokenCacheVersion)
    corrupt(path, "shard version " + std::to_string(h.version) + ", this build reads version " +
                      std::to_string(kTokenCacheVersion));
  if (h.header_size != kHeaderSize || h.header_crc != crc32c(bytes.first(kHeaderSize - 4)))
    corrupt(path, "corrupt header (checksum mismatch)");
  const auto sizes = section_sizes(h.rows, h.tokens, h.documents);
  uint64_t expected = kHeaderSize;
  for (uint64_t size : sizes) expected += pad8(size);
  if (bytes.size() != expected)
    corrupt(path, (bytes.size() < expected ? "truncated: " : "unexpected trailing data: ") +
                      std::to_string(bytes.size()) + " bytes, the header describes " +
                      std::to_string(expected));
  std::array<uint64_t, 5> hashes{};
  uint64_t at = kHeaderSize;
  std::array<const std::byte*, 5> starts{};
  for (size_t i = 0; i < 5; ++i) {
    starts[i] = bytes.data() + at;
    if (verify_payload) hashes[i] = payload_hash(bytes.subspan(at, sizes[i]));
    at += pad8(sizes[i]);
  }
  if (verify_payload && combine_hashes(hashes) != h.payload_hash)
    corrupt(path, "corrupt data (checksum mismatch)");
  s.rows = h.rows;
  s.row_offsets = reinterpret_cast<const uint64_t*>(starts[0]);
  s.input_ids = reinterpret_cast<const int32_t*>(starts[1]);
  s.labels = reinterpret_cast<const int32_t*>(starts[2]);
  s.doc_offsets = reinterpret_cast<const uint64_t*>(starts[3]);
  s.doc_lengths = reinterpret_cast<const int32_t*>(starts[4]);
  // Offsets are checked once here so row() can index without bounds checks.
  if (s.row_offsets[0] != 0 || s.row_offsets[h.rows] != h.tokens || s.doc_offsets[0] != 0 ||
      s.doc_offsets[h.rows] != h.documents)
    corrupt(path, "inconsistent row offsets");
  for (uint64_t r = 0; r < h.rows; ++r) {
    if (s.row_offsets[r + 1] < s.row_offsets[r] || s.doc_offsets[r + 1] < s.doc_offsets[r])
      corrupt(path, "row offsets decrease at row " + std::to_string(r));
  }
  return s;
}

std::unique_ptr<TokenCache> TokenCache::open_if_complete(const std::string& dir,
                                                         bool verify_payload) {
  const std::string manifest_path = (std::filesystem::path(dir) / kManifest).string();
  if (!std::filesystem::exists(manifest_path)) return nullptr;
  Json manifest = read_json_file(manifest_path, "cache");
  auto cache = std::unique_ptr<TokenCache>(new TokenCache());
  try {
    if (manifest.at("format") != "sft-token-cache" ||
        manifest.at("version").get<uint32_t>() != kTokenCacheVersion)
      corrupt(manifest_path,
              "not a token cache manifest of version " + std::to_string(kTokenCacheVersion));
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
        corrupt(paths[i], "holds " + std::to_string(s.rows) + " rows, the manifest says " +
                              shards[i].at("rows").dump());
      s.first_row = cache->num_rows_;
      cache->num_rows_ += s.rows;
      cache->num_tokens_ += s.row_offsets[s.rows];
    }
    if (cache->num_rows_ != manifest.at("rows").get<uint64_t>())
      corrupt(manifest_path, "row count does not match its shards");
    cache->metadata_ = manifest.at("metadata");
  } catch (const Json::exception& e) {
    corrupt(manifest_path, std::string("malformed manifest: ") + e.what());
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
