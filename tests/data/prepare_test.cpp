// prepare_dataset end to end (tiny tokenizer + ChatML template from tests/fixtures/prepare/cli):
// the cache key follows every input that changes rows and nothing else, a second call opens
// the cache with the same rows and report, and an in-memory preparation gives the same rows.
#include "data/prepare.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "data_test_util.h"

namespace sft::data {
namespace {

namespace fs = std::filesystem;

PrepareOptions base_options(const std::string& data, const std::string& cache) {
  const std::string fx = sft::test::source_path("tests/fixtures/prepare/cli");
  PrepareOptions o;
  o.source.name = data;
  o.tokenizer_path = fx + "/tokenizer";
  o.encode.assistant_only_loss = true;
  o.max_length = 40;
  o.cache_dir = cache;
  o.show_progress = false;
  return o;
}

TEST(Prepare, FingerprintFollowsInputsThatChangeRows) {
  const std::string dir = sft::test::fresh_output_dir("prepare_fingerprint");
  const std::string data = dir + "/chat.jsonl";
  fs::copy_file(sft::test::source_path("tests/fixtures/prepare/cli/chat.jsonl"), data);
  const PrepareOptions o = base_options(data, dir + "/cache");
  const std::string fp = prepare_fingerprint(o, {data});
  EXPECT_EQ(prepare_fingerprint(o, {data}), fp);

  auto changed = [&](auto&& edit) {
    PrepareOptions c = o;
    edit(c);
    return prepare_fingerprint(c, {data}) != fp;
  };
  EXPECT_TRUE(changed([](PrepareOptions& c) { c.max_length = 41; }));
  EXPECT_TRUE(changed([](PrepareOptions& c) { c.max_length = std::nullopt; }));
  EXPECT_TRUE(changed([](PrepareOptions& c) { c.truncation_mode = "keep_end"; }));
  EXPECT_TRUE(changed([](PrepareOptions& c) { c.packing = true; }));
  EXPECT_TRUE(changed([](PrepareOptions& c) { c.encode.assistant_only_loss = false; }));
  EXPECT_TRUE(changed([](PrepareOptions& c) { c.encode.completion_only_loss = false; }));
  EXPECT_TRUE(changed([](PrepareOptions& c) { c.encode.eos_token = "<|endoftext|>"; }));
  EXPECT_TRUE(changed([](PrepareOptions& c) { c.format.text_field = "content"; }));
  EXPECT_TRUE(changed([](PrepareOptions& c) { c.format.columns = {{"messages", "chat"}}; }));
  EXPECT_TRUE(changed([](PrepareOptions& c) { c.split = "test"; }));
  EXPECT_TRUE(changed([](PrepareOptions& c) { c.skip_invalid_rows = true; }));
  EXPECT_TRUE(changed([&](PrepareOptions& c) { c.chat_template_path = data; }));
  // Not part of the result: threads, progress, where the cache lives.
  EXPECT_FALSE(changed([](PrepareOptions& c) { c.num_threads = 7; }));
  EXPECT_FALSE(changed([](PrepareOptions& c) { c.show_progress = true; }));
  EXPECT_FALSE(changed([](PrepareOptions& c) { c.cache_dir = "/elsewhere"; }));
  {
    PrepareOptions packed = o;
    packed.packing = true;
    const std::string p = prepare_fingerprint(packed, {data});
    packed.pack.strategy = PackingStrategy::kWrapped;
    EXPECT_NE(prepare_fingerprint(packed, {data}), p);
  }
  // The data file: new content (size and mtime) changes the key.
  std::ofstream(data, std::ios::app) << "\n";
  fs::last_write_time(data, fs::last_write_time(data) + std::chrono::seconds(5));
  EXPECT_NE(prepare_fingerprint(o, {data}), fp);
}

TEST(Prepare, SecondCallOpensTheCache) {
  const std::string dir = sft::test::fresh_output_dir("prepare_cache");
  const std::string data = sft::test::source_path("tests/fixtures/prepare/cli/chat.jsonl");
  const PrepareOptions o = base_options(data, dir + "/cache");
  const auto first = prepare_dataset(o);
  EXPECT_FALSE(first->report().from_cache);
  EXPECT_EQ(first->report().rows_read, 12u);
  EXPECT_EQ(first->num_rows(), 4u);
  EXPECT_TRUE(fs::exists(dir + "/cache/" + first->fingerprint() + "/manifest.json"));

  const auto second = prepare_dataset(o);
  EXPECT_TRUE(second->report().from_cache);
  EXPECT_EQ(second->fingerprint(), first->fingerprint());
  PrepareOptions memory = o;
  memory.cache_dir = "";
  const auto third = prepare_dataset(memory);
  EXPECT_FALSE(third->report().from_cache);
  for (const auto* d : {second.get(), third.get()}) {
    ASSERT_EQ(d->num_rows(), first->num_rows());
    EXPECT_EQ(d->report().rows_kept, first->report().rows_kept);
    EXPECT_EQ(d->report().trained_tokens, first->report().trained_tokens);
    for (size_t i = 0; i < d->num_rows(); ++i) {
      const auto a = first->row(i), b = d->row(i);
      EXPECT_TRUE(std::ranges::equal(a.input_ids, b.input_ids)) << "row " << i;
      EXPECT_TRUE(std::ranges::equal(a.labels, b.labels)) << "row " << i;
      EXPECT_TRUE(std::ranges::equal(first->doc_lengths(i), d->doc_lengths(i))) << "row " << i;
    }
  }
}

}  // namespace
// An empty dataset fails naming its file and split, before any summary, and leaves no cache.
TEST(Prepare, AnEmptyDatasetNamesItsFileAndSplit) {
  const std::string dir = sft::test::fresh_output_dir("prepare_empty");
  const std::string data = dir + "/empty.jsonl";
  std::ofstream(data).flush();
  for (const std::string& cache : {dir + "/cache", std::string()}) {
    try {
      prepare_dataset(base_options(data, cache));
      ADD_FAILURE() << "an empty dataset must fail";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(data + ": the dataset's 'train' split has no rows"),
                std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("hint: "), std::string::npos) << e.what();
    }
  }
  if (fs::exists(dir + "/cache"))
    for (const auto& entry : fs::directory_iterator(dir + "/cache"))
      EXPECT_FALSE(fs::exists(entry.path() / "manifest.json")) << entry.path();
}

}  // namespace sft::data
