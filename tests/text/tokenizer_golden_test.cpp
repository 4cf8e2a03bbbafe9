// Parity with HF `tokenizers`: every corpus string (tests/fixtures/tokenizers/corpus.jsonl,
// ~12k strings) through every tokenizer — the tiny committed ones and the real ones in
// ../shared — must give the ids and decodes tools/make_tokenizer_goldens.py recorded.
// Per string we compare one FNV-1a digest over ids without/with special tokens, ids with
// split_special_tokens, and decode with/without skip_special_tokens; the first strings are
// also stored in clear so a failure shows a readable diff.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <sstream>

#include "io/json.h"
#include "test_paths.h"
#include "text/tokenizer.h"

namespace sft::text {
namespace {

struct Record {
  std::vector<int32_t> plain, special, split;
  std::string decode, decode_skip;
};

Record record(Tokenizer& tok, const std::string& s) {
  Record r;
  r.plain = tok.encode(s, false);
  r.special = tok.encode(s, true);
  tok.set_split_special_tokens(true);
  r.split = tok.encode(s, true);
  tok.set_split_special_tokens(false);
  r.decode = tok.decode(r.special, false);
  r.decode_skip = tok.decode(r.special, true);
  return r;
}

std::string digest(const Record& r) {
  uint64_t h = 0xCBF29CE484222325ull;
  auto byte = [&](uint8_t b) { h = (h ^ b) * 0x100000001B3ull; };
  for (const auto* ids : {&r.plain, &r.special, &r.split}) {
    for (int32_t id : *ids)
      for (int k = 0; k < 4; ++k) byte(uint8_t(uint32_t(id) >> (8 * k)));
    for (int k = 0; k < 4; ++k) byte(0xFF);
  }
  for (const auto* s : {&r.decode, &r.decode_skip}) {
    for (unsigned char c : *s) byte(c);
    byte(0xFE);
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

const std::vector<std::string>& corpus() {
  static const std::vector<std::string> strings = [] {
    std::vector<std::string> out;
    for (const auto& line : read_lines(test::source_path("tests/fixtures/tokenizers/corpus.jsonl")))
      out.push_back(Json::parse(line).get<std::string>());
    return out;
  }();
  return strings;
}

std::string ids_text(const std::vector<int32_t>& ids) {
  return Json(ids).dump();
}

// Sanitizer builds run ~5x slower and are there for memory errors, not parity: they check
// every 5th string of the big real tokenizers (all of them in the Release pass).
#if defined(__SANITIZE_ADDRESS__)
constexpr size_t kSanitizerStride = 5;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr size_t kSanitizerStride = 5;
#else
constexpr size_t kSanitizerStride = 1;
#endif
#else
constexpr size_t kSanitizerStride = 1;
#endif

void check_parity(const std::string& name, const std::string& path, size_t stride = 1) {
  const auto& strings = corpus();
  ASSERT_GE(strings.size(), 12000u);
  std::string golden = test::source_path("tests/fixtures/tokenizers/golden/" + name);
  auto hashes = read_lines(golden + ".hash");
  auto clear = read_lines(golden + ".ids.jsonl");
  ASSERT_EQ(hashes.size(), strings.size()) << "regenerate with tools/make_tokenizer_goldens.py";
  Tokenizer tok = Tokenizer::from_file(path);
  size_t mismatches = 0;
  for (size_t i = 0; i < strings.size(); i += stride) {
    Record r = record(tok, strings[i]);
    if (digest(r) == hashes[i]) continue;
    if (++mismatches > 5) continue;
    std::ostringstream msg;
    msg << name << ": corpus string " << i << " " << Json(strings[i].substr(0, 200)).dump()
        << "\n  ours: ids " << ids_text(r.plain) << "\n        with specials "
        << ids_text(r.special) << "\n        split specials " << ids_text(r.split)
        << "\n        decode " << Json(r.decode).dump() << " / skip " << Json(r.decode_skip).dump();
    if (i < clear.size()) msg << "\n  HF:   " << clear[i];
    ADD_FAILURE() << msg.str();
  }
  EXPECT_EQ(mismatches, 0u) << name << ": " << mismatches << " of " << strings.size()
                            << " strings differ from HF tokenizers";
}

class TinyParity : public ::testing::TestWithParam<const char*> {};

TEST_P(TinyParity, MatchesHfTokenizers) {
  std::string name = GetParam();
  check_parity(name, test::source_path("tests/fixtures/tokenizers/" + name + "/tokenizer.json"));
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, TinyParity,
                         ::testing::Values("tiny_qwen", "tiny_llama3", "tiny_gpt2", "tiny_llama2",
                                           "tiny_gemma", "tiny_metaspace", "tiny_wordish",
                                           "tiny_splits"));

class RealParity : public ::testing::TestWithParam<const char*> {};

TEST_P(RealParity, MatchesHfTokenizers) {
  std::string name = GetParam();
  const auto file = test::require_shared_asset("tokenizers/" + name + "/tokenizer.json");
  if (!file) return;
  check_parity(name, *file, kSanitizerStride);
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, RealParity,
                         ::testing::Values("qwen3", "llama3_1", "llama2", "gemma3", "deepseek_v3"));

}  // namespace
}  // namespace sft::text
