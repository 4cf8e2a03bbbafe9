// Token cache: shards round-trip rows and document lengths, a truncated or corrupted shard
// or an unfinished cache is never read as rows, and the fingerprint follows its inputs.
#include "data/token_cache.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "data_test_util.h"

namespace sft::data {
namespace {

namespace fs = std::filesystem;
using test_util::error_of;

std::vector<int32_t> vec(std::span<const int32_t> s) {
  return {s.begin(), s.end()};
}

// Three rows: a plain one, an empty one, a packed one with two documents.
void write_sample(TokenCacheWriter& w) {
  std::vector<int32_t> a = {5, 6, 7}, la = {-100, 6, 7};
  std::vector<int32_t> b, lb;
  std::vector<int32_t> c = {1, 2, 3, 4, 5}, lc = {-100, 2, -100, 4, 5}, dc = {2, 3};
  w.append({a, la});
  w.append({b, lb});
  w.append({c, lc}, dc);
}

TEST(TokenCache, RoundTripAcrossShards) {
  const std::string dir = sft::test::fresh_output_dir("token_cache_round_trip") + "/cache";
  TokenCacheWriter w(dir, /*shard_tokens=*/3);  // a new shard once 3 tokens are pending
  write_sample(w);
  EXPECT_EQ(TokenCacheWriter(dir + "-none", 3).rows(), 0u);
  w.finish(Json{{"answer", 42}});
  EXPECT_TRUE(fs::exists(dir + "/shard-00000.bin"));
  EXPECT_TRUE(fs::exists(dir + "/shard-00001.bin"));

  auto cache = TokenCache::open_if_complete(dir);
  ASSERT_TRUE(cache);
  ASSERT_EQ(cache->num_rows(), 3u);
  EXPECT_EQ(cache->num_tokens(), 8u);
  EXPECT_EQ(vec(cache->row(0).input_ids), (std::vector<int32_t>{5, 6, 7}));
  EXPECT_EQ(vec(cache->row(0).labels), (std::vector<int32_t>{-100, 6, 7}));
  EXPECT_EQ(vec(cache->doc_lengths(0)), (std::vector<int32_t>{3}));
  EXPECT_TRUE(cache->row(1).input_ids.empty());
  EXPECT_EQ(vec(cache->doc_lengths(1)), (std::vector<int32_t>{0}));
  EXPECT_EQ(vec(cache->row(2).input_ids), (std::vector<int32_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(vec(cache->row(2).labels), (std::vector<int32_t>{-100, 2, -100, 4, 5}));
  EXPECT_EQ(vec(cache->doc_lengths(2)), (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(cache->metadata().at("answer"), 42);
}

TEST(TokenCache, WithoutManifestIsNotACache) {
  const std::string dir = sft::test::fresh_output_dir("token_cache_unfinished") + "/cache";
  TokenCacheWriter w(dir, 1);
  write_sample(w);  // shards written, finish() never called: an interrupted run
  EXPECT_TRUE(fs::exists(dir + "/shard-00000.bin"));
  EXPECT_EQ(TokenCache::open_if_complete(dir), nullptr);
  EXPECT_EQ(TokenCache::open_if_complete(dir + "/missing"), nullptr);
}

std::string finished_cache(const std::string& name) {
  const std::string dir = sft::test::fresh_output_dir(name) + "/cache";
  TokenCacheWriter w(dir);
  write_sample(w);
  w.finish(Json::object());
  return dir;
}

TEST(TokenCache, TruncatedShardNamesTheFile) {
  const std::string dir = finished_cache("token_cache_truncated");
  const std::string shard = dir + "/shard-00000.bin";
  fs::resize_file(shard, fs::file_size(shard) - 8);
  const std::string err = error_of([&] { TokenCache::open_if_complete(dir); });
  EXPECT_NE(err.find("[cache] " + shard + ": truncated"), std::string::npos) << err;
  EXPECT_NE(err.find("hint: delete the cache folder"), std::string::npos) << err;
  fs::resize_file(shard, 10);
  EXPECT_NE(error_of([&] { TokenCache::open_if_complete(dir); }).find("shorter than the header"),
            std::string::npos);
}

void flip_byte(const std::string& path, std::streamoff at) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(at);
  char c = 0;
  f.get(c);
  f.seekp(at);
  f.put(static_cast<char>(c ^ 0x5a));
}

TEST(TokenCache, CorruptShardNamesTheFile) {
  const std::string dir = finished_cache("token_cache_corrupt");
  const std::string shard = dir + "/shard-00000.bin";
  flip_byte(shard, 64 + 4 * 8 + 4);  // inside input_ids
  std::string err = error_of([&] { TokenCache::open_if_complete(dir); });
  EXPECT_NE(err.find(shard + ": corrupt data (checksum mismatch)"), std::string::npos) << err;

  const std::string dir2 = finished_cache("token_cache_corrupt_header");
  flip_byte(dir2 + "/shard-00000.bin", 17);  // the row count
  err = error_of([&] { TokenCache::open_if_complete(dir2); });
  EXPECT_NE(err.find("corrupt header"), std::string::npos) << err;

  const std::string dir3 = finished_cache("token_cache_bad_magic");
  flip_byte(dir3 + "/shard-00000.bin", 0);
  err = error_of([&] { TokenCache::open_if_complete(dir3); });
  EXPECT_NE(err.find("bad magic"), std::string::npos) << err;
}

TEST(TokenCache, CorruptManifestNamesTheFile) {
  const std::string dir = finished_cache("token_cache_bad_manifest");
  std::ofstream(dir + "/manifest.json")
      << "{\"format\": \"sft-token-cache\", \"version\": " << kTokenCacheVersion << "}";
  const std::string err = error_of([&] { TokenCache::open_if_complete(dir); });
  EXPECT_NE(err.find(dir + "/manifest.json: malformed manifest"), std::string::npos) << err;
}

TEST(Fingerprint, FieldsAreDelimited) {
  Fingerprint a, b;
  a.add("ab", "c");
  a.add("y", "");
  b.add("a", "bc");
  b.add("y", "");
  EXPECT_NE(a.hex(), b.hex());
  EXPECT_EQ(a.hex().size(), 32u);
  Fingerprint c;
  c.add("ab", "c");
  c.add("y", "");
  EXPECT_EQ(a.hex(), c.hex());
}

TEST(Fingerprint, FollowsFileIdentityAndContents) {
  const std::string path =
      test_util::write_file("fingerprint_files", "data.jsonl", "{\"text\": \"a\"}\n");
  auto of = [&] {
    Fingerprint f;
    f.add_file_identity(path);
    f.add_file_contents("tok", path);
    return f.hex();
  };
  const std::string first = of();
  EXPECT_EQ(of(), first);
  // Same size, different bytes, mtime moved forward: both identity and contents change.
  std::ofstream(path, std::ios::binary) << "{\"text\": \"b\"}\n";
  fs::last_write_time(path, fs::last_write_time(path) + std::chrono::seconds(5));
  EXPECT_NE(of(), first);

  Fingerprint absent;
  absent.add_file_contents("tok", path + ".missing");
  Fingerprint empty;
  empty.add("tok", "");
  EXPECT_NE(absent.hex(), empty.hex());
  EXPECT_NE(error_of([&] {
              Fingerprint f;
              f.add_file_identity(path + ".missing");
            }).find("cannot stat"),
            std::string::npos);
}

}  // namespace
}  // namespace sft::data
