// PEFT adapter folders: adapter_config.json and adapter_model.safetensors. See adapter_io.h.
#include "train/adapter_io.h"

#include <cstring>
#include <filesystem>
#include <set>

#include "core/error.h"
#include "core/log.h"
#include "io/safetensors.h"
#include "model/model_dir.h"

namespace sft {

namespace {

namespace fs = std::filesystem;
constexpr const char* kComponent = "adapter";

[[noreturn]] void bad_field(const std::string& file, const std::string& field,
                            const std::string& problem) {
  fail_in_file(kComponent, {file, field}, problem,
               "sft trains and loads plain LoRA adapters (PEFT's LoraConfig defaults otherwise)");
}

std::vector<std::string> string_list(const Json& v, const std::string& file,
                                     const std::string& field) {
  std::vector<std::string> out;
  if (v.is_null()) return out;
  if (v.is_string()) return {v.get<std::string>()};
  if (!v.is_array()) bad_field(file, field, "must be a list of module names");
  for (const Json& s : v) {
    if (!s.is_string()) bad_field(file, field, "must be a list of module names");
    out.push_back(s.get<std::string>());
  }
  return out;
}

}  // namespace

bool is_adapter_dir(const std::string& dir) {
  return fs::is_regular_file(fs::path(dir) / kAdapterConfigFile);
}

model::LoraConfig read_adapter_config(const std::string& dir) {
  const std::string file = (fs::path(dir) / kAdapterConfigFile).string();
  const Json j = read_json_file(file, kComponent);
  auto get = [&](const char* key) -> const Json& {
    static const Json null;
    const auto it = j.find(key);
    return it == j.end() ? null : *it;
  };
  if (get("peft_type") != "LORA")
    bad_field(file, "peft_type", "is " + get("peft_type").dump() + ", not \"LORA\"");
  if (!get("task_type").is_null() && get("task_type") != "CAUSAL_LM")
    bad_field(file, "task_type", "is " + get("task_type").dump() + ", not \"CAUSAL_LM\"");
  if (get("use_dora") == true) bad_field(file, "use_dora", "DoRA is not implemented in sft.cpp");
  if (!get("bias").is_null() && get("bias") != "none")
    bad_field(file, "bias", "is " + get("bias").dump() + "; only \"none\" is supported");
  if (get("fan_in_fan_out") == true) bad_field(file, "fan_in_fan_out", "must be false");
  for (const char* k : {"rank_pattern", "alpha_pattern"})
    if (!get(k).is_null() && !get(k).empty())
      bad_field(file, k, "per-module patterns are not supported");
  for (const char* k :
       {"layers_to_transform", "layer_replication", "exclude_modules", "trainable_token_indices"})
    if (!get(k).is_null() && !(get(k).is_array() && get(k).empty()))
      bad_field(file, k, "is not supported (must be null)");
  model::LoraConfig c;
  try {
    c.r = get("r").get<int64_t>();
    c.alpha = get("lora_alpha").get<double>();
    c.dropout = get("lora_dropout").is_null() ? 0.0 : get("lora_dropout").get<double>();
    c.use_rslora = get("use_rslora").is_null() ? false : get("use_rslora").get<bool>();
    c.base_model_name_or_path = get("base_model_name_or_path").is_null()
                                    ? ""
                                    : get("base_model_name_or_path").get<std::string>();
  } catch (const Json::exception& e) {
    fail_in_file(kComponent, {file, ""}, std::string("malformed LoRA config: ") + e.what(),
                 "r and lora_alpha must be numbers");
  }
  if (c.r <= 0) bad_field(file, "r", "rank " + std::to_string(c.r) + " must be positive");
  c.target_modules = string_list(get("target_modules"), file, "target_modules");
  c.modules_to_save = string_list(get("modules_to_save"), file, "modules_to_save");
  // PEFT refuses a single string here (LoraConfig raises TypeError), so does sft.
  if (get("target_parameters").is_string())
    bad_field(file, "target_parameters", "must be a list of parameter names, not a string");
  c.target_parameters = string_list(get("target_parameters"), file, "target_parameters");
  return c;
}

Json adapter_config_json(const model::LoraModel& lora) {
  const model::LoraConfig& c = lora.config();
  Json save = c.modules_to_save.empty() ? Json(nullptr) : Json(c.modules_to_save);
  // Every field PEFT 0.21.2's LoraConfig.to_dict writes (tests/fixtures/lora/
  // peft_adapter_config.json), with its defaults where sft has no counterpart.
  return {
      {"alora_invocation_tokens", nullptr},
      {"alpha_pattern", Json::object()},
      {"arrow_config", nullptr},
      {"auto_mapping", nullptr},
      {"base_model_name_or_path", c.base_model_name_or_path},
      {"bias", "none"},
      {"corda_config", nullptr},
      {"ensure_weight_tying", false},
      {"eva_config", nullptr},
      {"exclude_modules", nullptr},
      {"fan_in_fan_out", false},
      {"inference_mode", true},
      {"init_lora_weights", true},
      {"kasa_config", nullptr},
      {"layer_replication", nullptr},
      {"layers_pattern", nullptr},
      {"layers_to_transform", nullptr},
      {"loftq_config", Json::object()},
      {"lora_alpha", c.alpha == static_cast<double>(static_cast<int64_t>(c.alpha))
                         ? Json(static_cast<int64_t>(c.alpha))
                         : Json(c.alpha)},
      {"lora_bias", false},
      {"lora_dropout", c.dropout},
      {"lora_ga_config", nullptr},
      {"megatron_config", nullptr},
      {"megatron_core", "megatron.core"},
      {"modules_to_save", save},
      {"monteclora_config", nullptr},
      {"peft_type", "LORA"},
      {"peft_version", "0.21.2"},
      {"qalora_group_size", 16},
      {"r", c.r},
      {"rank_pattern", Json::object()},
      {"revision", nullptr},
      {"target_modules", lora.targets()},  // [] when only target_parameters adapt, as PEFT
      {"target_parameters",
       c.target_parameters.empty() ? Json(nullptr) : Json(c.target_parameters)},
      {"task_type", "CAUSAL_LM"},
      {"trainable_token_indices", nullptr},
      {"use_bdlora", nullptr},
      {"use_dora", false},
      {"use_qalora", false},
      {"use_rslora", c.use_rslora},
      {"velora_config", nullptr},
  };
}

void load_adapter_weights(model::Transformer& model, const std::string& dir) {
  const std::string path = (fs::path(dir) / kAdapterWeightsFile).string();
  if (!fs::is_regular_file(path))
    fail_in_file(kComponent, {path, ""}, "missing",
                 "an adapter folder holds adapter_config.json and adapter_model.safetensors");
  if (!model.lora()) fail(kComponent, "load_adapter_weights: the model has no LoRA enabled");
  const SafetensorsFile f = SafetensorsFile::open(path);
  const std::string hint =
      "the adapter was trained on another base model or with another adapter_config.json; "
      "use the base_model_name_or_path it was made for";
  std::set<std::string> expected;
  // Check everything before copying anything.
  for (const model::Parameter& p : model.trainable().all()) {
    expected.insert(p.spec.name);
    const TensorEntry* e = f.find(p.spec.name);
    if (!e)
      fail_in_file(kComponent, {path, "tensor '" + p.spec.name + "'"},
                   "missing (the config's targets imply it on this " +
                       std::string(model_type_name(model.config().model_type)) + " model)",
                   hint);
    if (e->shape != p.spec.shape)
      fail_in_file(kComponent, {path, "tensor '" + p.spec.name + "'"},
                   "shape " + shape_to_string(e->shape) + ", the base model implies " +
                       shape_to_string(p.spec.shape),
                   hint);
  }
  for (const TensorEntry& e : f.entries())
    if (!expected.count(e.name))
      fail_in_file(kComponent, {path, "tensor '" + e.name + "'"},
                   "not an adapter tensor of this base model and adapter_config.json", hint);
  for (const model::Parameter& p : model.trainable().all()) {
    const std::vector<float> v = f.tensor(p.spec.name).to_f32_vector();
    std::memcpy(p.value.data, v.data(), v.size() * sizeof(float));
  }
  if (model.trainable().has_bf16_copies()) model.trainable().refresh_bf16_copies();
}

std::string resolve_adapter_base(const model::LoraConfig& c, const std::string& adapter_dir,
                                 const std::string& revision) {
  const std::string& base = c.base_model_name_or_path;
  const std::string file = (fs::path(adapter_dir) / kAdapterConfigFile).string();
  if (base.empty())
    fail_in_file(kComponent, {file, "base_model_name_or_path"}, "empty",
                 "the adapter must name the base model it was trained on");
  if (fs::is_directory(base)) return base;
  const fs::path beside = fs::path(adapter_dir) / base;
  if (fs::is_directory(beside)) return beside.string();
  return open_model_dir(base, revision).path;
}

model::Transformer load_model_with_adapter(const std::string& adapter_dir,
                                           const std::string& revision, std::string* base_dir,
                                           uint64_t seed, const model::Quant4Plan* quant4) {
  const model::LoraConfig c = read_adapter_config(adapter_dir);
  const std::string base = resolve_adapter_base(c, adapter_dir, revision);
  if (base_dir) *base_dir = base;
  model::Transformer m =
      quant4 ? model::Transformer::load_4bit(base, *quant4) : model::Transformer::load(base);
  m.enable_lora(c, seed, (fs::path(adapter_dir) / kAdapterConfigFile).string());
  load_adapter_weights(m, adapter_dir);
  log_info("[adapter] ", adapter_dir, ": LoRA r ", c.r, " on ", m.lora()->adapters().size(),
           " projections and ", m.lora()->expert_adapters().size(), " expert stacks of ", base);
  return m;
}

ModelSource resolve_model_source(const std::string& name_or_path, const std::string& revision) {
  ModelSource s;
  if (!is_adapter_dir(name_or_path)) {
    s.model_dir = open_model_dir(name_or_path, revision).path;
    s.tokenizer_dir = s.model_dir;
    return s;
  }
  s.adapter_dir = name_or_path;
  s.model_dir = resolve_adapter_base(read_adapter_config(name_or_path), name_or_path, revision);
  s.tokenizer_dir =
      fs::exists(fs::path(name_or_path) / "tokenizer.json") ? name_or_path : s.model_dir;
  return s;
}

model::Transformer load_model_source(const ModelSource& source) {
  if (source.adapter_dir.empty()) return model::Transformer::load(source.model_dir);
  return load_model_with_adapter(source.adapter_dir, "main", nullptr);
}

}  // namespace sft
