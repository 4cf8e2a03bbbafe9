// The JSON files of an HF export; see export_json.h.
#include "train/export_json.h"

#include <algorithm>
#include <vector>

#include "core/error.h"

namespace sft::export_json {

std::string torch_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "float32";
    case DType::kBF16:
      return "bfloat16";
    case DType::kF16:
      return "float16";
    default:
      fail("export", "cannot save weights as " + std::string(dtype_name(dtype)) +
                         " (hint: use float32, bfloat16 or float16)");
  }
}

namespace {

// eos_token_id may be an int, a list or null.
std::vector<int64_t> id_list(const Json& v) {
  std::vector<int64_t> out;
  if (v.is_number_integer()) out.push_back(v.get<int64_t>());
  if (v.is_array())
    for (const Json& e : v)
      if (e.is_number_integer()) out.push_back(e.get<int64_t>());
  return out;
}

// A token entry may be a plain string or an AddedToken object; the object form is kept.
void set_token(Json& object, const char* key, const std::string& content) {
  if (object.contains(key) && object[key].is_object()) {
    object[key]["content"] = content;
  } else {
    object[key] = content;
  }
}

}  // namespace

Json export_config(Json config, DType dtype, const TokenIds& ids) {
  if (!config.is_object()) fail("export", "config.json is not a JSON object");
  config.erase("torch_dtype");
  // The weights written are dense (a QLoRA merge dequantizes its 4-bit base): a base's
  // bitsandbytes quantization_config would make transformers expect 4-bit tensors.
  config.erase("quantization_config");
  config["dtype"] = torch_dtype_name(dtype);
  // A multimodal model's sub-configs (text_config, vision_config: objects with a model_type):
  // from_pretrained gives each the dtype it loads, so the save of a trained model writes it
  // in each of them too.
  for (auto& [key, sub] : config.items()) {
    if (!key.ends_with("_config") || !sub.is_object() || !sub.contains("model_type")) continue;
    sub.erase("torch_dtype");
    sub["dtype"] = torch_dtype_name(dtype);
  }
  if (ids.eos) config["eos_token_id"] = *ids.eos;
  if (ids.pad) config["pad_token_id"] = *ids.pad;
  config["transformers_version"] = kTransformersVersion;
  // transformers' Trainer sets config.use_cache = TrainingArguments.use_cache (False) when it
  // is built, so every model TRL saves says false (generation_config.json keeps its own).
  config["use_cache"] = false;
  return config;
}

Json export_generation_config(const Json& source, const Json& config, const TokenIds& ids) {
  Json g;
  if (source.is_object()) {
    g = source;
  } else {
    // GenerationConfig.from_model_config: the token ids the config has, plus the flags
    // transformers copies from it.
    g = Json::object();
    g["_from_model_config"] = true;
    for (const char* key : {"bos_token_id", "eos_token_id", "pad_token_id"})
      if (config.contains(key) && !config[key].is_null()) g[key] = config[key];
    g["output_attentions"] = config.value("output_attentions", false);
    g["output_hidden_states"] = config.value("output_hidden_states", false);
    g["use_cache"] = config.value("use_cache", true);
  }
  if (ids.eos) {
    // TRL adds the new eos to the existing ones (any of them stops generation), first.
    std::vector<int64_t> eos = id_list(g.value("eos_token_id", Json()));
    if (std::find(eos.begin(), eos.end(), *ids.eos) == eos.end()) {
      eos.insert(eos.begin(), *ids.eos);
      g["eos_token_id"] = eos;
    }
  }
  if (ids.pad) g["pad_token_id"] = *ids.pad;
  g["transformers_version"] = kTransformersVersion;
  return g;
}

Json export_tokenizer_config(Json config, const TokenStrings& tokens, bool drop_chat_template) {
  if (!config.is_object()) fail("export", "tokenizer_config.json is not a JSON object");
  if (tokens.eos) set_token(config, "eos_token", *tokens.eos);
  if (tokens.pad) set_token(config, "pad_token", *tokens.pad);
  if (drop_chat_template && config.contains("chat_template") && config["chat_template"].is_string())
    config.erase("chat_template");
  return config;
}

Json export_special_tokens_map(Json map, const TokenStrings& tokens) {
  if (!map.is_object()) fail("export", "special_tokens_map.json is not a JSON object");
  if (tokens.eos) set_token(map, "eos_token", *tokens.eos);
  if (tokens.pad) set_token(map, "pad_token", *tokens.pad);
  return map;
}

std::string dump_like_python(const Json& value, bool ensure_ascii) {
  return value.dump(2, ' ', ensure_ascii) + "\n";
}

}  // namespace sft::export_json
