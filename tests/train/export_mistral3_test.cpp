// The export of a trained multimodal Mistral 3 folder (tests/fixtures/models/mistral3_multimodal,
// tools/make_mistral3_multimodal_fixture.py): as save_pretrained writes the whole
// Mistral3ForConditionalGeneration, the folder holds the source's tensors under the source's
// names — the text model's trained values as language_model.model.* and
// language_model.lm_head.weight, the vision tower and the projector copied through unchanged —
// and the source's config.json with its text_config and vision_config. (tools/check_export.py
// loads the same export with transformers: export_test.cpp's FoldersForTheTransformersCheck.)
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "io/json.h"
#include "io/safetensors.h"
#include "model/transformer.h"
#include "test_paths.h"
#include "train/export.h"

namespace sft {
namespace {

Json read_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Json::parse(in);
}

std::vector<int64_t> ids(const SafetensorsFile& f, const std::string& name) {
  auto v = f.tensor(name).values<int64_t>();
  return {v.begin(), v.end()};
}

TEST(ExportMistral3, TrainedTextModelGoesBackUnderTheSourceNames) {
  const std::string src = test::source_path("tests/fixtures/models/mistral3_multimodal");
  const std::string dir = test::fresh_output_dir("export_mistral3_trained");
  model::Transformer m = model::Transformer::load(src);
  // One plain gradient step on the fixture's batch: every text tensor moves.
  const SafetensorsFile batch = SafetensorsFile::open(src + "/expected.safetensors");
  const model::Batch b{ids(batch, "input_ids"), ids(batch, "labels"), ids(batch, "doc_lengths")};
  const model::LossStats s = m.forward(b, nullptr, 1.0 / 20);
  ASSERT_GT(s.count, 0);
  m.backward(1.0 / 20);
  std::span<float> w = m.params().values();
  const std::span<const float> g = std::as_const(m).params().grads();
  for (size_t i = 0; i < w.size(); ++i) w[i] -= 0.5f * g[i];

  ExportOptions o;
  o.source_model_dir = src;
  export_hf_model(m, dir, o);
  EXPECT_NO_THROW(verify_export(m, dir, DType::kF32));

  const SafetensorsCheckpoint in = SafetensorsCheckpoint::open_dir(src);
  const SafetensorsCheckpoint out = SafetensorsCheckpoint::open_dir(dir);
  EXPECT_EQ(out.names(), in.names());
  std::vector<NamedTensor> trained = m.parameters();
  ASSERT_EQ(trained.size(), 21u);
  for (const NamedTensor& p : trained) {
    const std::string stored =
        p.name == "lm_head.weight"
            ? "language_model.lm_head.weight"
            : "language_model." + p.name;  // model.X → language_model.model.X
    ASSERT_TRUE(out.contains(stored)) << stored;
    EXPECT_EQ(out.tensor(stored).to_f32_vector(), p.tensor.to_f32_vector()) << stored;
    EXPECT_NE(out.tensor(stored).to_f32_vector(), in.tensor(stored).to_f32_vector()) << stored;
  }
  int others = 0;
  for (const std::string& name : in.names()) {
    if (name.rfind("language_model.", 0) == 0) continue;
    ++others;
    EXPECT_EQ(out.tensor(name).to_f32_vector(), in.tensor(name).to_f32_vector()) << name;
  }
  EXPECT_EQ(others, 15);  // the vision tower and the projector

  const Json source = read_json(src + "/config.json");
  const Json exported = read_json(dir + "/config.json");
  EXPECT_EQ(exported["model_type"], "mistral3");
  EXPECT_EQ(exported["architectures"], source["architectures"]);
  EXPECT_EQ(exported["tie_word_embeddings"], false);
  // Each sub-config also says the dtype written, as the save of a from_pretrained model does.
  for (const char* part : {"text_config", "vision_config"}) {
    Json sub = exported[part];
    EXPECT_EQ(sub["dtype"], "float32") << part;
    sub.erase("dtype");
    EXPECT_EQ(sub, source[part]) << part;
  }
  // And sft reads its own export back as the trained model.
  const model::Transformer back = model::Transformer::load(dir);
  const std::vector<NamedTensor> again = back.parameters();  // views into back's memory
  ASSERT_EQ(again.size(), trained.size());
  for (size_t i = 0; i < again.size(); ++i)
    EXPECT_EQ(again[i].tensor.to_f32_vector(), trained[i].tensor.to_f32_vector()) << again[i].name;
}

}  // namespace
}  // namespace sft
