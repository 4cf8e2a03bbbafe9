// `sft merge` of a QLoRA adapter (model/quant4_dequantize.h): tests/fixtures/qlora/merge/
// (tools/make_qlora_goldens.py) holds an adapter with non-zero A and B on all seven projections
// of the pre-quantized NF4 folder tests/fixtures/bnb4/qwen3_nf4_nested, and what the merge must
// give: bitsandbytes' dequantize_4bit of each base weight plus PEFT's get_delta_weight, in fp32.
// We load the folder 4-bit, dequantize, load the adapter, merge and compare every tensor.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "model/quant4_dequantize.h"
#include "model/transformer.h"
#include "test_paths.h"
#include "train/adapter_io.h"

namespace sft {
namespace {

namespace fs = std::filesystem;

const std::string kMerge = "tests/fixtures/qlora/merge";

struct InRepoRoot {
  fs::path old = fs::current_path();
  InRepoRoot() { fs::current_path(test::source_path(".")); }
  ~InRepoRoot() { fs::current_path(old); }
};

TEST(QloraMerge, DequantizedBasePlusDeltaAsBitsandbytesAndPeft) {
  InRepoRoot root;
  const SafetensorsFile expected = SafetensorsFile::open(kMerge + "/expected.safetensors");
  const std::string adapter = kMerge + "/adapter";
  const model::LoraConfig lora = read_adapter_config(adapter);
  ASSERT_EQ(lora.base_model_name_or_path, "tests/fixtures/bnb4/qwen3_nf4_nested");
  model::Transformer q =
      model::Transformer::load_4bit(lora.base_model_name_or_path, model::Quant4Plan{});
  model::Transformer m = model::dequantized_model(q);
  m.enable_lora(lora, 0, adapter);
  load_adapter_weights(m, adapter);
  m.merge_lora();
  int compared = 0;
  double worst = 0;
  for (const NamedTensor& p : m.parameters()) {
    if (!expected.find("merged." + p.name)) continue;
    const std::vector<float> want = expected.tensor("merged." + p.name).to_f32_vector();
    const std::vector<float> got = p.tensor.to_f32_vector();
    ASSERT_EQ(got.size(), want.size()) << p.name;
    for (size_t i = 0; i < got.size(); ++i)
      worst = std::max(worst, std::fabs(double(got[i]) - double(want[i])));
    ++compared;
  }
  EXPECT_EQ(compared, 15);  // 14 projections + the embedding
  EXPECT_LT(worst, 1e-6);
}

}  // namespace
}  // namespace sft
