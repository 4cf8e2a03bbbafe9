// Token offsets against HF `tokenizers`: ~450 corpus strings (non-ASCII, whitespace runs,
// special-token text, normalization changes) and ~40 alignment corner cases, through every
// tokenizer with and without special tokens, must give the ids and byte offsets that
// tools/make_tokenizer_offset_goldens.py recorded (HF's character offsets converted to
// bytes). The ids must also equal encode()'s.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sstream>

#include "io/json.h"
#include "io/mapped_file.h"
#include "test_paths.h"
#include "text/tokenizer.h"

namespace sft::text {
namespace {

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

const std::vector<std::string>& corpus() {
  static const std::vector<std::string> strings = [] {
    std::vector<std::string> out;
    // The corpus, then the offsets-only corner cases (indices continue after the corpus).
    for (const char* file : {"corpus.jsonl", "offsets/extra_strings.jsonl"})
      for (const auto& line : read_lines(test::source_path("tests/fixtures/tokenizers/") + file))
        out.push_back(Json::parse(line).get<std::string>());
    return out;
  }();
  return strings;
}

std::string digest(const Encoding& plain, const Encoding& special) {
  uint64_t h = 0xCBF29CE484222325ull;
  auto byte = [&](uint8_t b) { h = (h ^ b) * 0x100000001B3ull; };
  auto u32 = [&](uint32_t v) {
    for (int k = 0; k < 4; ++k) byte(uint8_t(v >> (8 * k)));
  };
  for (const Encoding* e : {&plain, &special}) {
    for (int32_t id : e->ids) u32(uint32_t(id));
    u32(0xFFFFFFFFu);
    for (auto [b, en] : e->offsets) u32(uint32_t(b)), u32(uint32_t(en));
    u32(0xFFFFFFFFu);
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string offsets_text(const Encoding& e) {
  Json j = Json::array();
  for (auto [b, en] : e.offsets) j.push_back(Json::array({b, en}));
  return Json(e.ids).dump() + " " + j.dump();
}

void check_offsets(const std::string& name, const Tokenizer& tok) {
  const auto& strings = corpus();
  std::string golden = test::source_path("tests/fixtures/tokenizers/offsets/" + name);
  auto hashes = read_lines(golden + ".hash");
  auto clear = read_lines(golden + ".clear.jsonl");
  ASSERT_GE(hashes.size(), 300u) << "regenerate with tools/make_tokenizer_offset_goldens.py";
  size_t mismatches = 0;
  for (size_t k = 0; k < hashes.size(); ++k) {
    std::istringstream line(hashes[k]);
    size_t index;
    std::string hash;
    line >> index >> hash;
    ASSERT_LT(index, strings.size());
    const std::string& s = strings[index];
    Encoding plain = tok.encode_with_offsets(s, false);
    Encoding special = tok.encode_with_offsets(s, true);
    ASSERT_EQ(plain.ids.size(), plain.offsets.size());
    EXPECT_EQ(plain.ids, tok.encode(s, false)) << name << ": corpus string " << index;
    EXPECT_EQ(special.ids, tok.encode(s, true)) << name << ": corpus string " << index;
    if (digest(plain, special) == hash) continue;
    if (++mismatches > 5) continue;
    std::ostringstream msg;
    size_t cut = std::min<size_t>(s.size(), 200);
    while (cut < s.size() && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
    msg << name << ": corpus string " << index << " " << Json(s.substr(0, cut)).dump()
        << "\n  ours: " << offsets_text(plain) << "\n  with specials: " << offsets_text(special);
    if (k < clear.size()) msg << "\n  HF:   " << clear[k];
    ADD_FAILURE() << msg.str();
  }
  EXPECT_EQ(mismatches, 0u) << name << ": " << mismatches << " of " << hashes.size()
                            << " strings differ from HF tokenizers' offsets";
}

class TinyOffsets : public ::testing::TestWithParam<const char*> {};

TEST_P(TinyOffsets, MatchHfTokenizers) {
  std::string name = GetParam();
  check_offsets(name, Tokenizer::from_file(test::source_path("tests/fixtures/tokenizers/" + name)));
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, TinyOffsets,
                         ::testing::Values("tiny_qwen", "tiny_llama3", "tiny_gpt2", "tiny_llama2",
                                           "tiny_gemma", "tiny_metaspace", "tiny_wordish",
                                           "tiny_splits"));

class RealOffsets : public ::testing::TestWithParam<const char*> {};

TEST_P(RealOffsets, MatchHfTokenizers) {
  std::string name = GetParam();
  const auto dir = test::require_shared_asset("tokenizers/" + name);
  if (!dir) return;
  check_offsets(name, Tokenizer::from_file(*dir));
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, RealOffsets,
                         ::testing::Values("qwen3", "llama3_1", "llama2", "gemma3", "deepseek_v3"));

// A tiny tokenizer with its post_processor replaced (offsets/variants.json): trim_offsets=true
// of ByteLevel and RobertaProcessing, which no committed tokenizer uses.
class VariantOffsets : public ::testing::TestWithParam<const char*> {};

TEST_P(VariantOffsets, MatchHfTokenizers) {
  std::string name = GetParam();
  std::string dir = test::source_path("tests/fixtures/tokenizers/");
  Json variant = Json::parse(read_text_file(dir + "offsets/variants.json", "test"))[name];
  std::string base = dir + variant["base"].get<std::string>() + "/tokenizer.json";
  Json spec = Json::parse(read_text_file(base, "test"));
  spec["post_processor"] = variant["post_processor"];
  check_offsets(name, Tokenizer::from_json(spec.dump(), base + " (" + name + ")"));
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, VariantOffsets,
                         ::testing::Values("tiny_gpt2_trim", "tiny_qwen_trim",
                                           "tiny_llama3_roberta"));

// Readable spot checks of HF's conventions (values from HF tokenizers 0.23.3).
TEST(TokenizerOffsets, SplitCharactersShareTheirRange) {
  Tokenizer tok = Tokenizer::from_file(test::source_path("tests/fixtures/tokenizers/tiny_qwen"));
  // "中" is two byte-level tokens: both cover its 3 bytes.
  Encoding e = tok.encode_with_offsets("h\xC3\xA9llo \xE4\xB8\xAD");
  using O = std::pair<size_t, size_t>;
  EXPECT_EQ(e.offsets, (std::vector<O>{{0, 1}, {1, 3}, {3, 6}, {6, 7}, {7, 10}, {7, 10}}));
}

TEST(TokenizerOffsets, SpecialTokensFromThePostProcessorAreEmpty) {
  Tokenizer tok = Tokenizer::from_file(test::source_path("tests/fixtures/tokenizers/tiny_llama2"));
  Encoding e = tok.encode_with_offsets("Hi", true);
  ASSERT_GE(e.offsets.size(), 2u);
  EXPECT_EQ(e.offsets[0], (std::pair<size_t, size_t>{0, 0}));
  EXPECT_EQ(e.offsets[1], (std::pair<size_t, size_t>{0, 1}));  // "▁" aligns with "H"
}

}  // namespace
}  // namespace sft::text
