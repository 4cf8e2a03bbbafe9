// Internal to the config reader (config.cpp, config_moe_families.cpp, config_multimodal.cpp):
// typed access to config.json keys with errors naming the file and key, the mixture-of-experts
// families' reader and writer, and the multimodal wrappers' text models, kept apart from
// config.cpp so each file stays one concern.
#pragma once

#include <string>
#include <string_view>

#include "core/error.h"
#include "model/config.h"

namespace sft::config_detail {

inline constexpr std::string_view kComponent = "config";

// Typed access to config.json keys with errors that name the file and key.
class Reader {
 public:
  Reader(const Json& json, const std::string& source) : json_(json), source_(source) {}

  [[noreturn]] void bad(const std::string& key, const std::string& problem,
                        std::string_view hint = {}) const {
    fail_in_file(
        kComponent, {source_, "key '" + key + "'"}, problem,
        hint.empty()
            ? std::string_view("fix the value in config.json, or re-save it with save_pretrained")
            : hint);
  }

  // Null counts as absent: HF writes `"head_dim": null` for "derive it".
  const Json* get(const Json& obj, const std::string& key) const {
    auto it = obj.find(key);
    return (it == obj.end() || it->is_null()) ? nullptr : &*it;
  }
  const Json* get(const std::string& key) const { return get(json_, key); }
  // Present at all, null included (Gemma 2's soft-caps: null = none, absent = the default).
  bool has(const std::string& key) const { return json_.contains(key); }

  int64_t integer(const Json& v, const std::string& key) const {
    if (!v.is_number_integer())
      bad(key, "expected an integer, got " + json_type_name(v) + " " + v.dump());
    return v.get<int64_t>();
  }
  int64_t positive(const std::string& key, int64_t fallback) const {
    const Json* v = get(key);
    int64_t out = v ? integer(*v, key) : fallback;
    if (out <= 0) bad(key, "expected a positive integer, got " + std::to_string(out));
    return out;
  }
  double number(const Json& v, const std::string& key) const {
    if (!v.is_number()) bad(key, "expected a number, got " + json_type_name(v) + " " + v.dump());
    return v.get<double>();
  }
  double number_or(const Json& obj, const std::string& key, double fallback) const {
    const Json* v = get(obj, key);
    return v ? number(*v, key) : fallback;
  }
  bool boolean(const std::string& key, bool fallback) const {
    const Json* v = get(key);
    if (!v) return fallback;
    if (!v->is_boolean())
      bad(key, "expected true or false, got " + json_type_name(*v) + " " + v->dump());
    return v->get<bool>();
  }
  std::string string(const std::string& key, const std::string& fallback) const {
    const Json* v = get(key);
    if (!v) return fallback;
    if (!v->is_string()) bad(key, "expected a string, got " + json_type_name(*v));
    return v->get<std::string>();
  }
  std::optional<int64_t> optional_integer(const std::string& key) const {
    const Json* v = get(key);
    if (!v) return std::nullopt;
    return integer(*v, key);
  }

 private:
  const Json& json_;
  const std::string& source_;
};

// Which mixture-of-experts family a model type is (config.cpp's type table names it; the
// families' keys, defaults and tensor names are one table in config_moe_families.cpp).
enum class MoeFamily { kNone, kQwen3Moe, kOlmoe, kMixtral, kGraniteMoe, kGptOss };

// The family's expert keys (their config class's defaults where absent), which layers have
// experts, and the experts' tensor names (ModelConfig::moe_module and friends).
void read_moe(const Reader& r, ModelConfig& c, MoeFamily family);
// The same keys back into a config.json, as the family's config class writes them.
void write_moe(const ModelConfig& c, MoeFamily family, Json& j);

// A multimodal folder's config.json (config_multimodal.cpp: gemma3, mistral3): whether
// `model_type` names one, and the config of the text model it nests under text_config.
bool is_multimodal_type(std::string_view model_type);
ModelConfig parse_multimodal_config(const Json& json, const std::string& source);

}  // namespace sft::config_detail
