// Encoder against TRL 1.16: for every case of tests/fixtures/sft_encode/goldens.json
// (tools/make_sft_encode_goldens.py: a real SFTTrainer's train_dataset with packing off and
// no truncation) the rows, read through the dataset format reader as `sft` reads them, must
// encode to identical input_ids and labels. Needs the real tokenizers in ../shared/assets
// (fails without them unless SFT_ALLOW_MISSING_ASSETS=1; tests/test_paths.h).
#include <gtest/gtest.h>

#include <iostream>
#include <map>

#include "data/encode.h"
#include "data/format.h"
#include "data_test_util.h"
#include "io/mapped_file.h"
#include "text/tokenizer_config.h"

namespace sft::data {
namespace {

// Ordered: rows go back to JSONL with the keys in the order TRL saw them.
const RowJson& goldens() {
  static const RowJson g = parse_ordered_json_strict(
      read_text_file(test::source_path("tests/fixtures/sft_encode/goldens.json"), "test"), "test",
      "sft_encode/goldens.json");
  return g;
}

struct CaseResult {
  size_t rows = 0;
  size_t double_bos = 0;
  size_t prompt_not_prefix = 0;
};

CaseResult run_case(const RowJson& c, const std::string& tokenizers_dir) {
  const std::string name = c["name"].get<std::string>();
  const std::string tok_dir = tokenizers_dir + "/" + c["tokenizer"].get<std::string>();
  // Loading a real tokenizer dominates the test's time: once per tokenizer.
  static std::map<std::string, text::Tokenizer> loaded;
  auto it = loaded.find(tok_dir);
  if (it == loaded.end()) it = loaded.emplace(tok_dir, text::Tokenizer::from_file(tok_dir)).first;
  const text::Tokenizer& tok = it->second;
  text::TokenizerConfig config = text::TokenizerConfig::from_file(tok_dir);
  chat::SpecialTokens special{config.bos_token, config.eos_token, config.pad_token,
                              config.unk_token};
  std::optional<chat::ChatTemplate> tmpl;
  if (c["chat_template"].is_string())
    tmpl = chat::ChatTemplate::from_file(test::source_path(c["chat_template"].get<std::string>()),
                                         special);
  else if (std::optional<std::string> source = config.chat_template())
    tmpl.emplace(*source, special);  // llama2's tokenizer has none: text rows only

  const RowJson& o = c["options"];
  EncodeOptions options;
  if (o.contains("completion_only_loss")) options.completion_only_loss = o["completion_only_loss"];
  options.assistant_only_loss = o.value("assistant_only_loss", false);
  if (o.contains("eos_token")) options.eos_token = o["eos_token"].get<std::string>();
  options.tokenizer_eos_token = config.eos_token;
  Encoder encoder(tok, tmpl ? &*tmpl : nullptr, options);

  std::string jsonl;
  for (const RowJson& r : c["rows"]) jsonl += r["row"].dump() + "\n";
  std::string path = test_util::write_file("encode_golden_" + name, "rows.jsonl", jsonl);
  std::vector<Example> examples;
  RowErrors errors(false);
  read_examples({path}, {}, errors,
                [&](Example&& e, const RowRef&) { examples.push_back(std::move(e)); });
  EXPECT_EQ(examples.size(), c["rows"].size()) << name;

  // TRL keeps a double BOS; the encoder must flag exactly those rows.
  std::optional<int32_t> bos = config.bos_token ? tok.token_to_id(*config.bos_token) : std::nullopt;
  CaseResult result;
  for (size_t i = 0; i < examples.size() && i < c["rows"].size(); ++i) {
    const RowJson& want = c["rows"][i];
    EncodedRow got = encoder.encode(examples[i]);
    EXPECT_EQ(got.input_ids, want["input_ids"].get<std::vector<int32_t>>())
        << name << " row " << i << ": " << want["row"].dump();
    EXPECT_EQ(got.labels, want["labels"].get<std::vector<int32_t>>())
        << name << " row " << i << ": " << want["row"].dump();
    const RowJson& ids = want["input_ids"];
    bool want_double = bos && ids.size() >= 2 && ids[0] == *bos && ids[1] == *bos;
    EXPECT_EQ(got.double_bos, want_double) << name << " row " << i;
    EXPECT_FALSE(got.double_bos_fixed);
    result.double_bos += got.double_bos;
    EXPECT_EQ(got.prompt_not_prefix, want.value("prompt_not_prefix", false))
        << name << " row " << i;
    result.prompt_not_prefix += got.prompt_not_prefix;
    ++result.rows;
  }
  return result;
}

TEST(EncodeGolden, MatchesTrlForEveryCase) {
  const std::optional<std::string> tokenizers = test::require_shared_asset("tokenizers");
  if (!tokenizers) return;
  size_t cases = 0, rows = 0, double_bos = 0, prompt_not_prefix = 0;
  for (const RowJson& c : goldens()["cases"]) {
    CaseResult r = run_case(c, *tokenizers);
    double_bos += r.double_bos;
    prompt_not_prefix += r.prompt_not_prefix;
    rows += r.rows;
    ++cases;
  }
  EXPECT_GE(cases, 33u);
  EXPECT_GE(rows, 300u);
  EXPECT_EQ(double_bos, 4u);
  std::cout
      << cases << " cases, " << rows << " rows, " << prompt_not_prefix
      << " prompts not a prefix\n";  // the llama 3 and llama 2 rows that start with the BOS string
}

}  // namespace
}  // namespace sft::data
