// PEFT adapter folders with target_parameters (LoRA on the experts' stacks) through
// train/adapter_io.h, against the folders PEFT 0.21 saved (tests/fixtures/lora_experts/<fixture>/
// adapter, tools/make_lora_expert_goldens.py): sft loads them on their base and gives PEFT's
// logits; it writes them back bit for bit with PEFT's adapter_config.json fields
// (target_parameters included); and it refuses, naming file and field, what PEFT refuses.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
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

constexpr const char* kFixtures[] = {"qwen3_moe_topk_norm", "gpt_oss_experts_sinks",
                                     "olmoe_experts", "mixtral_experts_sliding",
                                     "granitemoe_multipliers"};

// The adapters' base paths are relative to the repository root.
struct InRepoRoot {
  fs::path old = fs::current_path();
  InRepoRoot() { fs::current_path(test::source_path(".")); }
  ~InRepoRoot() { fs::current_path(old); }
};

std::string adapter_dir(const std::string& fixture) {
  return "tests/fixtures/lora_experts/" + fixture + "/adapter";
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(LoraExpertsAdapter, LoadsPeftsFolderAndWritesItBack) {
  InRepoRoot root;
  for (const char* name : kFixtures) {
    SCOPED_TRACE(name);
    const SafetensorsFile batch_file = SafetensorsFile::open(
        "tests/fixtures/parity/" + std::string(name) + "/expected.safetensors");
    auto ids = [&](const char* key) {
      const auto v = batch_file.tensor(key).values<int64_t>();
      return std::vector<int64_t>(v.begin(), v.end());
    };
    const model::Batch batch{ids("input_ids"), ids("labels"), ids("doc_lengths")};
    model::Transformer m = load_model_with_adapter(adapter_dir(name), "main", nullptr);
    EXPECT_EQ(m.lora()->expert_adapters().size(), 4u);
    std::vector<float> logits(batch.tokens.size() * static_cast<size_t>(m.config().vocab_size));
    m.forward(batch, logits.data());
    const std::vector<float> want =
        SafetensorsFile::open("tests/fixtures/lora_experts/" + std::string(name) +
                              "/expected.safetensors")
            .tensor("logits")
            .to_f32_vector();
    double diff = 0, top = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      diff = std::max(diff, std::fabs(double(logits[i]) - want[i]));
      top = std::max(top, std::fabs(double(want[i])));
    }
    EXPECT_LE(diff, 1e-4 * top);

    const fs::path out =
        fs::temp_directory_path() / ("sft_lora_experts_adapter_" + std::string(name));
    fs::remove_all(out);
    export_peft_adapter(m, out.string(), ExportOptions{});
    verify_adapter_export(m, out.string());
    const SafetensorsFile theirs =
        SafetensorsFile::open(adapter_dir(name) + "/" + kAdapterWeightsFile);
    const SafetensorsFile ours = SafetensorsFile::open((out / kAdapterWeightsFile).string());
    ASSERT_EQ(ours.entries().size(), theirs.entries().size());
    for (const TensorEntry& e : theirs.entries()) {
      const Tensor a = theirs.tensor(e.name), b = ours.tensor(e.name);
      ASSERT_EQ(a.nbytes(), b.nbytes()) << e.name;
      EXPECT_EQ(std::memcmp(a.bytes(), b.bytes(), a.nbytes()), 0) << e.name;
    }
    const Json peft = read_json_file(adapter_dir(name) + "/" + kAdapterConfigFile, "test");
    const Json mine = read_json_file((out / kAdapterConfigFile).string(), "test");
    std::vector<std::string> pk, mk;
    for (auto it = peft.begin(); it != peft.end(); ++it) pk.push_back(it.key());
    for (auto it = mine.begin(); it != mine.end(); ++it) mk.push_back(it.key());
    EXPECT_EQ(mk, pk);
    // PEFT writes both lists from sets, in no fixed order.
    EXPECT_EQ(sorted(mine.at("target_parameters").get<std::vector<std::string>>()),
              sorted(peft.at("target_parameters").get<std::vector<std::string>>()));
    EXPECT_EQ(sorted(mine.at("target_modules").get<std::vector<std::string>>()),
              sorted(peft.at("target_modules").get<std::vector<std::string>>()));
    EXPECT_EQ(mine.at("lora_dropout"), 0.0);
    fs::remove_all(out);
  }
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(LoraExpertsAdapter, RefusesWhatPeftRefuses) {
  InRepoRoot root;
  const fs::path dir = fs::temp_directory_path() / "sft_lora_experts_adapter_bad";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy(adapter_dir(kFixtures[0]), dir, fs::copy_options::recursive);
  const std::string cfg_path = (dir / kAdapterConfigFile).string();
  const Json cfg = read_json_file(cfg_path, "test");
  auto write = [&](const Json& j) { std::ofstream(cfg_path) << j.dump(2); };

  Json one = cfg;  // LoraConfig raises TypeError on a string
  one["target_parameters"] = "mlp.experts.down_proj";
  write(one);
  std::string msg = error_of([&] { read_adapter_config(dir.string()); });
  EXPECT_NE(msg.find("target_parameters"), std::string::npos) << msg;
  EXPECT_NE(msg.find(kAdapterConfigFile), std::string::npos) << msg;

  Json dropout = cfg;  // ParamWrapper raises on lora_dropout != 0
  dropout["lora_dropout"] = 0.1;
  write(dropout);
  msg = error_of([&] { load_model_with_adapter(dir.string(), "main", nullptr); });
  EXPECT_NE(msg.find("target_parameters"), std::string::npos) << msg;
  EXPECT_NE(msg.find(cfg_path), std::string::npos) << msg;
  EXPECT_NE(msg.find("lora_dropout 0"), std::string::npos) << msg;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sft
