// PEFT adapter folders (train/adapter_io.h) against PEFT itself: tests/fixtures/lora/merge/
// (tools/make_lora_goldens.py) holds an adapter with non-zero A and B on all seven projections
// plus modules_to_save ["norm"], and PEFT's logits of the adapted model and of
// merge_and_unload() with every merged weight. We load the adapter on its base, compare the
// logits (1e-5), merge and compare weights (1e-6) and logits (1e-5); write the adapter back out
// and check the file round-trips bit for bit with PEFT's field set in adapter_config.json;
// and check the refusals (DoRA, a mismatched base, a missing tensor) name file and tensor.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "model/transformer.h"
#include "test_paths.h"
#include "train/adapter_io.h"
#include "train/export.h"

namespace sft {
namespace {

namespace fs = std::filesystem;

const std::string kMerge = "tests/fixtures/lora/merge";

std::vector<float> logits_of(model::Transformer& m, const std::vector<int64_t>& ids) {
  std::vector<float> out(ids.size() * static_cast<size_t>(m.config().vocab_size));
  m.forward(model::Batch{ids, {}, {}}, out.data());
  return out;
}

std::vector<int64_t> fixture_tokens() {
  const Json j = read_json_file(test::source_path(kMerge + "/tokens.json"), "test");
  return j.at("input_ids").get<std::vector<int64_t>>();
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double d = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    d = std::max(d, std::fabs(double(a[i]) - double(b[i])));
  return d;
}

// The fixture adapter's base path is relative to the repository root.
struct InRepoRoot {
  fs::path old = fs::current_path();
  InRepoRoot() { fs::current_path(test::source_path(".")); }
  ~InRepoRoot() { fs::current_path(old); }
};

TEST(LoraAdapter, LogitsAndMergeMatchPeft) {
  InRepoRoot root;
  const SafetensorsFile expected = SafetensorsFile::open(kMerge + "/expected.safetensors");
  std::string base;
  model::Transformer m = load_model_with_adapter(kMerge + "/adapter", "main", &base);
  EXPECT_EQ(base, "tests/fixtures/trl_parity/model");
  EXPECT_EQ(m.lora()->adapters().size(), 14u);
  EXPECT_EQ(m.lora()->saved().size(), 9u);  // "norm": every *norm module
  const std::vector<int64_t> ids = fixture_tokens();
  EXPECT_LT(max_abs_diff(logits_of(m, ids), expected.tensor("logits").to_f32_vector()), 1e-5);

  m.merge_lora();
  double worst = 0;
  for (const NamedTensor& p : m.parameters()) {
    const std::vector<float> want = expected.tensor("merged." + p.name).to_f32_vector();
    const std::vector<float> got = p.tensor.to_f32_vector();
    worst = std::max(worst, max_abs_diff(got, want));
  }
  EXPECT_LT(worst, 1e-6);
  EXPECT_LT(max_abs_diff(logits_of(m, ids), expected.tensor("merged_logits").to_f32_vector()),
            1e-5);
}

TEST(LoraAdapter, WritesWhatPeftReads) {
  InRepoRoot root;
  model::Transformer m = load_model_with_adapter(kMerge + "/adapter", "main", nullptr);
  const fs::path out = fs::temp_directory_path() / "sft_lora_adapter_test";
  fs::remove_all(out);
  ExportOptions o;
  o.tokenizer_dir = "tests/fixtures/trl_parity/model";
  export_peft_adapter(m, out.string(), o);
  verify_adapter_export(m, out.string());
  EXPECT_TRUE(fs::exists(out / "tokenizer.json"));
  const SafetensorsFile theirs = SafetensorsFile::open(kMerge + "/adapter/" + kAdapterWeightsFile);
  const SafetensorsFile ours = SafetensorsFile::open((out / kAdapterWeightsFile).string());
  ASSERT_EQ(ours.entries().size(), theirs.entries().size());
  for (const TensorEntry& e : theirs.entries()) {
    const Tensor a = theirs.tensor(e.name), b = ours.tensor(e.name);
    ASSERT_EQ(a.nbytes(), b.nbytes()) << e.name;
    EXPECT_EQ(std::memcmp(a.bytes(), b.bytes(), a.nbytes()), 0) << e.name;
  }
  // The same fields as PEFT 0.21 writes.
  const Json peft = read_json_file("tests/fixtures/lora/peft_adapter_config.json", "test");
  const Json mine = read_json_file((out / kAdapterConfigFile).string(), "test");
  std::vector<std::string> pk, mk;
  for (auto it = peft.begin(); it != peft.end(); ++it) pk.push_back(it.key());
  for (auto it = mine.begin(); it != mine.end(); ++it) mk.push_back(it.key());
  EXPECT_EQ(mk, pk);
  EXPECT_EQ(mine.at("r"), 4);
  EXPECT_EQ(mine.at("lora_alpha"), 8);
  EXPECT_EQ(mine.at("modules_to_save"), Json::array({"norm"}));
  EXPECT_EQ(mine.at("base_model_name_or_path"), "tests/fixtures/trl_parity/model");
  fs::remove_all(out);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(LoraAdapter, RefusesWhatItCannotComputeOrDoesNotFit) {
  InRepoRoot root;
  const fs::path dir = fs::temp_directory_path() / "sft_lora_adapter_bad";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy(kMerge + "/adapter", dir, fs::copy_options::recursive);
  const std::string cfg_path = (dir / kAdapterConfigFile).string();
  Json cfg = read_json_file(cfg_path, "test");
  auto write = [&](const Json& j) { std::ofstream(cfg_path) << j.dump(2); };

  Json dora = cfg;
  dora["use_dora"] = true;
  write(dora);
  EXPECT_NE(error_of([&] { read_adapter_config(dir.string()); }).find("use_dora"),
            std::string::npos);

  // Another rank than the tensors have: names the file, the tensor and both shapes.
  Json r8 = cfg;
  r8["r"] = 8;
  write(r8);
  const std::string shape =
      error_of([&] { load_model_with_adapter(dir.string(), "main", nullptr); });
  EXPECT_NE(shape.find("adapter_model.safetensors: tensor 'base_model.model.model.layers.0."),
            std::string::npos)
      << shape;
  EXPECT_NE(shape.find("shape [4, 64], the base model implies [8, 64]"), std::string::npos)
      << shape;

  // Fewer targets than the file holds: the extra tensors are named.
  Json fewer = cfg;
  fewer["target_modules"] = Json::array({"q_proj"});
  write(fewer);
  const std::string extra =
      error_of([&] { load_model_with_adapter(dir.string(), "main", nullptr); });
  EXPECT_NE(extra.find("not an adapter tensor of this base model"), std::string::npos) << extra;

  Json bad_target = cfg;
  bad_target["target_modules"] = Json::array({"qkv"});
  write(bad_target);
  const std::string unknown =
      error_of([&] { load_model_with_adapter(dir.string(), "main", nullptr); });
  EXPECT_NE(unknown.find("adapter_config.json: target module 'qkv'"), std::string::npos) << unknown;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sft
