// HF export: the files, TRL's eos/pad rules, sharding, reload equality, verify_export and
// write failures. The model is the qwen3 fixture's config resized to the tiny_qwen
// tokenizer's vocabulary (702), so every token id the tokenizer has is a row of the model.
#include "train/export.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>

#include "core/error.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "test_paths.h"
#include "train/args.h"
#include "train/export_json.h"

namespace sft {

namespace fs = std::filesystem;

namespace {

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write(const std::string& path, const std::string& content) {
  std::ofstream(path, std::ios::binary) << content;
}

Json read_json(const std::string& path) {
  return Json::parse(read(path));
}

constexpr int64_t kVocab = 702;  // tiny_qwen: 700 BPE tokens + <think>, </think>

class Export : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::fresh_output_dir(std::string("export_") +
                                  testing::UnitTest::GetInstance()->current_test_info()->name());
    // Source model: the qwen3 fixture's config with the tokenizer's vocabulary; eos 0.
    src_ = dir_ + "/src";
    fs::create_directories(src_);
    Json config = read_json(test::source_path("tests/fixtures/models/qwen3/config.json"));
    config["vocab_size"] = kVocab;
    config["eos_token_id"] = 0;
    write(src_ + "/config.json", config.dump(2));
    Json gen = read_json(test::source_path("tests/fixtures/models/qwen3/generation_config.json"));
    gen["eos_token_id"] = 0;
    write(src_ + "/generation_config.json", gen.dump(2));

    // Tokenizer folder: tiny_qwen's tokenizer.json + transformers-style side files.
    tok_ = dir_ + "/tok";
    fs::create_directories(tok_);
    fs::copy_file(test::source_path("tests/fixtures/tokenizers/tiny_qwen/tokenizer.json"),
                  tok_ + "/tokenizer.json");
    write(tok_ + "/tokenizer_config.json", R"({
  "add_bos_token": false,
  "chat_template": "{% for m in messages %}{{ m.content }}{% endfor %}",
  "eos_token": "<|endoftext|>",
  "model_max_length": 512,
  "pad_token": "<|endoftext|>",
  "tokenizer_class": "Qwen2Tokenizer"
})");
    write(tok_ + "/special_tokens_map.json",
          R"({"eos_token": {"content": "<|endoftext|>", "lstrip": false, "normalized": false,
"rstrip": false, "single_word": false}, "pad_token": "<|endoftext|>"})");

    model_ = std::make_unique<model::Transformer>(
        model::Transformer::random(load_model_config(src_ + "/config.json"), 7, 0.5f));
  }

  ExportOptions options() const {
    ExportOptions o;
    o.source_model_dir = src_;
    o.tokenizer_dir = tok_;
    return o;
  }

  std::string dir_, src_, tok_;
  std::unique_ptr<model::Transformer> model_;
};

void expect_same_parameters(const model::Transformer& a, const model::Transformer& b) {
  const std::vector<NamedTensor> pa = a.parameters(), pb = b.parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_EQ(pa[i].name, pb[i].name);
    ASSERT_EQ(pa[i].tensor.nbytes(), pb[i].tensor.nbytes());
    EXPECT_EQ(0, std::memcmp(pa[i].tensor.bytes(), pb[i].tensor.bytes(), pa[i].tensor.nbytes()))
        << pa[i].name;
  }
}

// sft's logits on the exported model, for tools/check_export.py --logits.
void write_sft_logits(model::Transformer& m, const std::string& path) {
  model::Batch batch;
  const int64_t V = m.config().vocab_size;
  for (int64_t t = 0; t < 16; ++t) batch.tokens.push_back((t * 7919 + 13) % V);
  Tensor logits = Tensor::zeros(DType::kF32, {16, V});
  m.forward(batch, logits.mutable_values<float>().data());
  Tensor ids = Tensor::borrow(DType::kI64, {16}, batch.tokens.data(), nullptr);
  write_safetensors(path, {{"input_ids", ids}, {"logits", logits}});
}

// The keys export_config sets whatever the source says (dtype, TRL's use_cache = false, the
// version; eos/pad only with a tokenizer or --eos_token, which these exports have not).
bool export_sets(const std::string& key) {
  return key == "dtype" || key == "torch_dtype" || key == "use_cache" ||
         key == "transformers_version";
}

// A value without the dtype export_config writes into a multimodal config's sub-configs.
Json without_dtype(Json value) {
  if (value.is_object()) {
    value.erase("dtype");
    value.erase("torch_dtype");
  }
  return value;
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_F(Export, WritesEveryFileWithTrlsEosAndPadRules) {
  ExportOptions o = options();
  o.eos_token = "<|im_end|>";  // id 2
  write(dir_ + "/template.jinja", "{{ messages[0].content }}");
  o.chat_template_path = dir_ + "/template.jinja";
  const std::string out = dir_ + "/out";
  export_hf_model(*model_, out, o);

  for (const char* f :
       {"config.json", "generation_config.json", "model.safetensors", "tokenizer.json",
        "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja"})
    EXPECT_TRUE(fs::is_regular_file(out + "/" + f)) << f;
  EXPECT_FALSE(fs::exists(out + "/model.safetensors.index.json"));
  EXPECT_EQ(read(out + "/tokenizer.json"), read(tok_ + "/tokenizer.json"));
  EXPECT_EQ(read(out + "/chat_template.jinja"), "{{ messages[0].content }}");

  const Json config = read_json(out + "/config.json");
  EXPECT_EQ(config["eos_token_id"], 2);
  EXPECT_EQ(config["pad_token_id"], 0);  // the tokenizer's pad token, <|endoftext|>
  EXPECT_EQ(config["dtype"], "float32");
  EXPECT_FALSE(config.contains("torch_dtype"));
  EXPECT_EQ(config["rope_parameters"]["rope_theta"], 10000.0);  // other keys as the source
  EXPECT_EQ(config["layer_types"].size(), 2u);

  const Json gen = read_json(out + "/generation_config.json");
  EXPECT_EQ(gen["eos_token_id"], Json::array({2, 0}));  // the new eos first, the old kept
  EXPECT_EQ(gen["pad_token_id"], 0);
  EXPECT_EQ(gen["bos_token_id"], 1);
  EXPECT_EQ(gen["transformers_version"], export_json::kTransformersVersion);

  const Json tc = read_json(out + "/tokenizer_config.json");
  EXPECT_EQ(tc["eos_token"], "<|im_end|>");
  EXPECT_EQ(tc["pad_token"], "<|endoftext|>");
  EXPECT_EQ(tc["model_max_length"], 512);
  EXPECT_EQ(tc["tokenizer_class"], "Qwen2Tokenizer");
  EXPECT_FALSE(tc.contains("chat_template"));  // chat_template.jinja replaces it

  const Json map = read_json(out + "/special_tokens_map.json");
  EXPECT_EQ(map["eos_token"]["content"], "<|im_end|>");
  EXPECT_EQ(map["eos_token"]["normalized"], false);
}

TEST_F(Export, EosAlreadyListedStaysWhereItIs) {
  ExportOptions o = options();
  o.eos_token = "<|endoftext|>";  // id 0, already the generation config's eos
  export_hf_model(*model_, dir_ + "/out", o);
  EXPECT_EQ(read_json(dir_ + "/out/generation_config.json")["eos_token_id"], 0);
  EXPECT_EQ(read_json(dir_ + "/out/config.json")["eos_token_id"], 0);
}

TEST_F(Export, WithoutEosTokenKeepsTheSourceTemplateAndIds) {
  const std::string out = dir_ + "/out";
  export_hf_model(*model_, out, options());
  EXPECT_EQ(read_json(out + "/config.json")["eos_token_id"], 0);
  EXPECT_EQ(read_json(out + "/generation_config.json")["eos_token_id"], 0);
  const Json tc = read_json(out + "/tokenizer_config.json");
  EXPECT_EQ(tc["eos_token"], "<|endoftext|>");
  // transformers 5's save_pretrained: the string template moves to chat_template.jinja.
  EXPECT_FALSE(tc.contains("chat_template"));
  EXPECT_EQ(read(out + "/chat_template.jinja"),
            "{% for m in messages %}{{ m.content }}{% endfor %}");
  // As transformers' Trainer leaves the config (generation_config.json keeps the source's).
  EXPECT_EQ(read_json(out + "/config.json")["use_cache"], false);
  EXPECT_EQ(read_json(out + "/generation_config.json")["use_cache"], true);
}

TEST_F(Export, SourceChatTemplateJinjaIsKept) {
  write(tok_ + "/chat_template.jinja", "{{ 'jinja file wins' }}");
  const std::string out = dir_ + "/out";
  export_hf_model(*model_, out, options());
  EXPECT_EQ(read(out + "/chat_template.jinja"), "{{ 'jinja file wins' }}");
  EXPECT_FALSE(read_json(out + "/tokenizer_config.json").contains("chat_template"));
}

TEST_F(Export, NoTemplateWritesNoJinja) {
  write(tok_ + "/tokenizer_config.json", R"({"eos_token": "<|endoftext|>"})");
  const std::string out = dir_ + "/out";
  export_hf_model(*model_, out, options());
  EXPECT_FALSE(fs::exists(out + "/chat_template.jinja"));
}

TEST_F(Export, PadTokenFallsBackToEos) {
  write(tok_ + "/tokenizer_config.json", R"({"eos_token": "<|endoftext|>"})");
  ExportOptions o = options();
  o.eos_token = "<|im_end|>";
  export_hf_model(*model_, dir_ + "/out", o);
  EXPECT_EQ(read_json(dir_ + "/out/tokenizer_config.json")["pad_token"], "<|im_end|>");
  EXPECT_EQ(read_json(dir_ + "/out/config.json")["pad_token_id"], 2);
}

TEST_F(Export, BadChatTemplatePathFailsBeforeWriting) {
  ExportOptions o = options();
  o.chat_template_path = dir_ + "/no_such.jinja";
  const std::string msg = error_of([&] { export_hf_model(*model_, dir_ + "/out", o); });
  EXPECT_NE(msg.find("--chat_template_path"), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(dir_ + "/out"));
}

TEST_F(Export, UnknownEosTokenIsAnError) {
  ExportOptions o = options();
  o.eos_token = "<|no_such_token|>";
  const std::string msg = error_of([&] { export_hf_model(*model_, dir_ + "/out", o); });
  EXPECT_NE(msg.find("[export]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("<|no_such_token|>"), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(dir_ + "/out"));  // nothing written
}

TEST_F(Export, ShardsPastMaxShardBytesAndReloadsEqual) {
  ExportOptions o = options();
  o.max_shard_bytes = 100'000;
  const std::string out = dir_ + "/out";
  export_hf_model(*model_, out, o);
  EXPECT_TRUE(fs::is_regular_file(out + "/model.safetensors.index.json"));
  EXPECT_FALSE(fs::exists(out + "/model.safetensors"));
  const Json index = read_json(out + "/model.safetensors.index.json");
  std::set<std::string> shards;
  for (const auto& [name, file] : index["weight_map"].items())
    shards.insert(file.get<std::string>());
  EXPECT_GT(shards.size(), 1u);
  for (const std::string& s : shards) EXPECT_TRUE(fs::is_regular_file(out + "/" + s)) << s;
  expect_same_parameters(*model_, model::Transformer::load(out));

  // Exporting again unsharded into the same folder removes the stale shards and index.
  export_hf_model(*model_, out, options());
  EXPECT_FALSE(fs::exists(out + "/model.safetensors.index.json"));
  for (const std::string& s : shards) EXPECT_FALSE(fs::exists(out + "/" + s)) << s;
  expect_same_parameters(*model_, model::Transformer::load(out));
}

TEST_F(Export, VerifyPassesForEveryDtype) {
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    ExportOptions o = options();
    o.dtype = dtype;
    const std::string out = dir_ + "/out_" + std::string(dtype_name(dtype));
    export_hf_model(*model_, out, o);
    EXPECT_EQ(read_json(out + "/config.json")["dtype"], export_json::torch_dtype_name(dtype));
    const std::vector<float> before = model_->parameters()[0].tensor.to_f32_vector();
    EXPECT_NO_THROW(verify_export(*model_, out, dtype)) << dtype_name(dtype);
    // verify rounds the in-memory weights only temporarily.
    EXPECT_TRUE(before == model_->parameters()[0].tensor.to_f32_vector());
  }
}

TEST_F(Export, VerifyDetectsACorruptedWeightFile) {
  const std::string out = dir_ + "/out";
  export_hf_model(*model_, out, options());
  std::string bytes = read(out + "/model.safetensors");
  bytes[bytes.size() - 5] ^= 0x40;  // inside the last tensor's data
  write(out + "/model.safetensors", bytes);
  const std::string msg = error_of([&] { verify_export(*model_, out, DType::kF32); });
  EXPECT_EQ(msg.rfind("[export]", 0), 0u) << msg;
  EXPECT_NE(msg.find("differs"), std::string::npos) << msg;
}

TEST_F(Export, VerifyDetectsAConfigThatDescribesAnotherModel) {
  const std::string out = dir_ + "/out";
  export_hf_model(*model_, out, options());
  Json config = read_json(out + "/config.json");
  config["rms_norm_eps"] = 0.1;  // loads fine, computes something else
  write(out + "/config.json", config.dump(2));
  const std::string msg = error_of([&] { verify_export(*model_, out, DType::kF32); });
  EXPECT_NE(msg.find("logits"), std::string::npos) << msg;
}

TEST_F(Export, WithoutSourceConfigWritesTheModelsOwn) {
  ExportOptions o;  // a model built from a config in memory, no tokenizer
  const std::string out = dir_ + "/out";
  export_hf_model(*model_, out, o);
  EXPECT_FALSE(fs::exists(out + "/tokenizer.json"));
  const Json gen = read_json(out + "/generation_config.json");
  EXPECT_EQ(gen["_from_model_config"], true);
  EXPECT_EQ(gen["bos_token_id"], 1);
  EXPECT_EQ(gen["eos_token_id"], 0);
  EXPECT_NO_THROW(verify_export(*model_, out, DType::kF32));
}

TEST_F(Export, SourceConfigOfAnotherModelIsAnError) {
  Json config = read_json(src_ + "/config.json");
  config["vocab_size"] = 256;
  write(src_ + "/config.json", config.dump(2));
  const std::string msg = error_of([&] { export_hf_model(*model_, dir_ + "/out", options()); });
  EXPECT_NE(msg.find("other parameters"), std::string::npos) << msg;
}

TEST_F(Export, UnwritableFolderIsAClearError) {
  // A folder that cannot be created: its parent is a file.
  write(dir_ + "/file", "x");
  std::string msg = error_of([&] { export_hf_model(*model_, dir_ + "/file/out", options()); });
  EXPECT_EQ(msg.rfind("[export] cannot create output folder", 0), 0u) << msg;

  // A file that cannot be replaced (works as root too): config.json is a folder.
  fs::create_directories(dir_ + "/out/config.json");
  msg = error_of([&] { export_hf_model(*model_, dir_ + "/out", options()); });
  EXPECT_EQ(msg.rfind("[export] cannot write config.json into", 0), 0u) << msg;

  if (geteuid() != 0) {  // permissions do not stop root
    fs::create_directories(dir_ + "/ro");
    fs::permissions(dir_ + "/ro", fs::perms::owner_read | fs::perms::owner_exec);
    msg = error_of([&] { export_hf_model(*model_, dir_ + "/ro", options()); });
    fs::permissions(dir_ + "/ro", fs::perms::owner_all);
    EXPECT_NE(msg.find("hint: check that the folder is writable"), std::string::npos) << msg;
  }
}

// Folders for tools/check_export.py (transformers loads them and compares logits with
// sft_logits.safetensors): one transformers-saved model per family (the qwen3 and llama
// fixtures, and the parity fixtures of the families whose layers differ: SmolLM3's layers
// without RoPE, OLMo 2's post norms, Granite's multipliers), and the tokenizer-sized model with
// --eos_token. Checked here: verify_export, the reload bit for bit, and every family key of
// the source config.json (no_rope_layers, the multipliers, ...) written back unchanged.
TEST_F(Export, FoldersForTheTransformersCheck) {
  for (const char* name :
       {"models/qwen3", "models/llama", "parity/smollm3_nope_sliding", "parity/olmo2_post_norms",
        "parity/granite_multipliers", "parity/phi3_longrope_short", "parity/phi3_longrope_long",
        "parity/gemma3_sliding_softcap", "parity/gemma2_softcaps", "models/gemma3_multimodal",
        "models/mistral3_multimodal", "parity/ministral3_query_scaling",
        "parity/gpt_oss_experts_sinks"}) {
    const std::string src = test::source_path("tests/fixtures/") + name;
    const std::string folder = fs::path(name).filename().string();
    const std::string dir = test::fresh_output_dir("export_fixture_" + folder);
    model::Transformer m = model::Transformer::load(src);
    ExportOptions o;
    o.source_model_dir = src;
    export_hf_model(m, dir + "/model", o);
    EXPECT_NO_THROW(verify_export(m, dir + "/model", DType::kF32)) << name;
    expect_same_parameters(m, model::Transformer::load(dir + "/model"));
    const Json source = read_json(src + "/config.json");
    const Json exported = read_json(dir + "/model/config.json");
    for (const auto& [key, value] : source.items()) {
      if (export_sets(key)) continue;
      ASSERT_TRUE(exported.contains(key)) << name << ": " << key;
      EXPECT_EQ(without_dtype(exported[key]), without_dtype(value)) << name << ": " << key;
    }
    write_sft_logits(m, dir + "/sft_logits.safetensors");
  }
  const std::string dir = test::fresh_output_dir("export_fixture_tiny_qwen_eos");
  ExportOptions o = options();
  o.eos_token = "<|im_end|>";
  export_hf_model(*model_, dir + "/model", o);
  EXPECT_NO_THROW(verify_export(*model_, dir + "/model", DType::kF32));
  write_sft_logits(*model_, dir + "/sft_logits.safetensors");
}

// A multimodal Gemma 3 source: the text model goes back under the names the source stores it
// as (language_model.model.*), and the vision tower and projector are copied through in the
// saved dtype (bf16 here), so the folder has the source's tensors, no more and no fewer.
TEST_F(Export, MultimodalGemma3KeepsTheOtherParts) {
  const std::string src = test::source_path("tests/fixtures/models/gemma3_multimodal");
  const std::string dir = test::fresh_output_dir("export_gemma3_multimodal_bf16");
  model::Transformer m = model::Transformer::load(src);
  ExportOptions o;
  o.source_model_dir = src;
  o.dtype = DType::kBF16;
  export_hf_model(m, dir, o);
  EXPECT_NO_THROW(verify_export(m, dir, DType::kBF16));
  const SafetensorsCheckpoint in = SafetensorsCheckpoint::open_dir(src);
  const SafetensorsCheckpoint out = SafetensorsCheckpoint::open_dir(dir);
  EXPECT_EQ(out.names(), in.names());
  int others = 0;
  for (const std::string& name : in.names()) {
    if (name.rfind("language_model.", 0) == 0) continue;
    ++others;
    EXPECT_EQ(out.entry(name).dtype, DType::kBF16) << name;
    EXPECT_EQ(out.tensor(name).to_f32_vector(), in.tensor(name).to(DType::kBF16).to_f32_vector())
        << name;
  }
  EXPECT_GT(others, 10);  // the vision tower and the projector
}

TEST_F(Export, OptionsFromTrainingArgs) {
  TrainingArgs args;
  args.eos_token = "<|im_end|>";
  args.pad_token = "<|endoftext|>";
  args.chat_template_path = "t.jinja";
  args.max_shard_size = "100KB";
  ExportOptions o = export_options_from_args(args, src_, tok_);
  EXPECT_EQ(o.source_model_dir, src_);
  EXPECT_EQ(o.tokenizer_dir, tok_);
  EXPECT_EQ(o.eos_token, "<|im_end|>");
  EXPECT_EQ(o.pad_token, "<|endoftext|>");
  EXPECT_EQ(o.chat_template_path, "t.jinja");
  EXPECT_EQ(o.max_shard_bytes, 100'000u);
  EXPECT_EQ(o.dtype, DType::kF32);  // TrainingArgs' default --dtype float32

  args.dtype = "bfloat16";
  EXPECT_EQ(export_options_from_args(args, src_, tok_).dtype, DType::kBF16);
  args.dtype = "auto";  // the source config's dtype
  EXPECT_EQ(export_options_from_args(args, src_, tok_).dtype, DType::kF32);
  Json config = read_json(src_ + "/config.json");
  config["dtype"] = "float16";
  write(src_ + "/config.json", config.dump(2));
  EXPECT_EQ(export_options_from_args(args, src_, tok_).dtype, DType::kF16);
  EXPECT_EQ(export_options_from_args(args, "", "").dtype, DType::kF32);
  args.dtype = "int8";
  EXPECT_NE(error_of([&] { export_options_from_args(args, src_, tok_); }).find("--dtype int8"),
            std::string::npos);
}

// Goldens from tools/make_export_goldens.py: TRL's SFTTrainer eos/pad steps + save_pretrained.
TEST(ExportGoldens, ConfigAndGenerationConfigAreTrlsBytes) {
  const std::string fixtures = test::source_path("tests/fixtures/export");
  struct Case {
    const char* name;
    const char* tokenizer_config;
    std::optional<std::string> eos;
    bool with_generation_config = true;
  };
  for (const Case& c : {Case{"eos_im_end", "with_pad", "<|im_end|>"},
                        Case{"eos_im_end_no_pad", "without_pad", "<|im_end|>"},
                        Case{"no_eos", "with_pad", std::nullopt},
                        Case{"eos_no_gen_config", "with_pad", "<|im_end|>", false}}) {
    const std::string dir = test::fresh_output_dir(std::string("export_golden_") + c.name);
    fs::create_directories(dir + "/tok");
    fs::copy_file(test::source_path("tests/fixtures/tokenizers/tiny_qwen/tokenizer.json"),
                  dir + "/tok/tokenizer.json");
    fs::copy_file(fixtures + "/source/" + c.tokenizer_config + ".json",
                  dir + "/tok/tokenizer_config.json");
    const model::Transformer m =
        model::Transformer::random(load_model_config(fixtures + "/source/config.json"), 1);
    ExportOptions o;
    o.source_model_dir = fixtures + "/source";
    if (!c.with_generation_config) {
      fs::create_directories(dir + "/src");
      fs::copy_file(fixtures + "/source/config.json", dir + "/src/config.json");
      o.source_model_dir = dir + "/src";
    }
    o.tokenizer_dir = dir + "/tok";
    o.eos_token = c.eos;
    export_hf_model(m, dir + "/out", o);
    for (const char* f : {"config.json", "generation_config.json"})
      EXPECT_EQ(read(dir + "/out/" + f), read(fixtures + "/" + c.name + "/" + f))
          << c.name << " " << f;
  }
}

// The real Qwen3 tokenizer folder (../shared; see require_shared_asset): the model's vocabulary
// (Qwen3's 151936 rows) covers the tokenizer's ids (151669), as in the released models.
TEST(ExportRealTokenizer, Qwen3EosAndPadIds) {
  const std::optional<std::string> qwen_dir = test::require_shared_asset("tokenizers/qwen3");
  if (!qwen_dir) return;
  const std::string tok = *qwen_dir;
  const std::string dir = test::fresh_output_dir("export_real_qwen3");
  Json config = read_json(test::source_path("tests/fixtures/models/qwen3/config.json"));
  config["vocab_size"] = 151936;
  config["eos_token_id"] = 151643;
  fs::create_directories(dir + "/src");
  write(dir + "/src/config.json", config.dump(2));
  model::Transformer m = model::Transformer::random(load_model_config(dir + "/src/config.json"), 3);
  ExportOptions o;
  o.source_model_dir = dir + "/src";
  o.tokenizer_dir = tok;
  o.eos_token = "<|im_end|>";
  o.dtype = DType::kBF16;
  export_hf_model(m, dir + "/out", o);
  EXPECT_EQ(read_json(dir + "/out/config.json")["eos_token_id"], 151645);
  EXPECT_EQ(read_json(dir + "/out/config.json")["pad_token_id"], 151643);  // <|endoftext|>
  EXPECT_EQ(read_json(dir + "/out/generation_config.json")["eos_token_id"],
            Json::array({151645, 151643}));
  const Json src_tc = read_json(tok + "/tokenizer_config.json");
  Json tc = read_json(dir + "/out/tokenizer_config.json");
  EXPECT_EQ(tc["eos_token"], "<|im_end|>");
  tc["eos_token"] = src_tc["eos_token"];
  // The template moved to chat_template.jinja (transformers 5); nothing else changed.
  Json src_without_template = src_tc;
  if (src_tc.contains("chat_template") && src_tc["chat_template"].is_string()) {
    EXPECT_EQ(read(dir + "/out/chat_template.jinja"), src_tc["chat_template"].get<std::string>());
    src_without_template.erase("chat_template");
  }
  EXPECT_EQ(tc, src_without_template);  // added_tokens_decoder, ...
  EXPECT_EQ(read(dir + "/out/tokenizer.json"), read(tok + "/tokenizer.json"));
  EXPECT_NO_THROW(verify_export(m, dir + "/out", DType::kBF16));
}

TEST(ExportJson, ModelConfigRoundTrips) {
  for (const char* name : {"llama", "mistral", "qwen2", "qwen3"}) {
    const ModelConfig c =
        load_model_config(test::source_path("tests/fixtures/models/") + name + "/config.json");
    const ModelConfig back = parse_model_config(model_config_to_json(c), name);
    const std::vector<ParamSpec> a = parameter_layout(c), b = parameter_layout(back);
    ASSERT_EQ(a.size(), b.size()) << name;
    for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].shape, b[i].shape) << a[i].name;
    EXPECT_EQ(back.rope.type, c.rope.type) << name;
    EXPECT_EQ(back.rope.theta, c.rope.theta) << name;
    EXPECT_EQ(back.rope.factor, c.rope.factor) << name;
    EXPECT_EQ(back.layer_sliding_window, c.layer_sliding_window) << name;
    EXPECT_EQ(back.sliding_window, c.sliding_window) << name;
    EXPECT_EQ(back.rms_norm_eps, c.rms_norm_eps) << name;
    EXPECT_EQ(back.tie_word_embeddings, c.tie_word_embeddings) << name;
    EXPECT_EQ(back.eos_token_ids, c.eos_token_ids) << name;
  }
}

}  // namespace sft
