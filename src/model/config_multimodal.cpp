// The text model of a multimodal folder's config.json: Gemma3Config (model_type gemma3) and
// Mistral3Config (mistral3) nest the decoder sft trains under text_config, beside a
// vision_config sft leaves alone (the export copies the vision tower and projector through,
// model/text_model_names.h). transformers 5.24's rules, per wrapper:
// - text_config's model type: Gemma3Config always builds a Gemma3TextConfig; Mistral3Config
//   builds the class text_config.model_type names (mistral when absent; sft reads mistral,
//   ministral and ministral3 there), and with no text_config at all a MistralConfig of
//   Mistral3Config's own defaults (Mistral Small 3.1's sizes).
// - tie_word_embeddings: *ForConditionalGeneration ties lm_head to the embedding by the outer
//   config's key (default true), which save_pretrained writes beside text_config's own (false for
//   Mistral's classes): the outer key when present, else text_config's, else the text class's
//   default. (A config of transformers 4, with neither key, meant the text class's default, and
//   its checkpoint stores lm_head when that is false; 5.24 then unties them itself.)
// - the dtype and the token ids count where text_config has none.
// - Gemma3ForConditionalGeneration applies no final_logit_softcapping (only Gemma3ForCausalLM
//   does); Mistral's text models have none.
#include <string>
#include <string_view>

#include "model/config_reader.h"

namespace sft::config_detail {

namespace {

// A text model type a wrapper accepts, and the causal-LM class that holds it alone (the
// architecture sft reports for the text model it loads).
struct TextType {
  std::string_view model_type, architecture;
};

struct MultimodalType {
  std::string_view name;
  std::string_view wrapper_architecture;
  bool text_type_fixed;  // text_config.model_type is not read (Gemma3Config)
  TextType text_types[3];
  // text_config when it is absent, as a JSON object (Mistral3Config's sub-config defaults).
  std::string_view absent_text_config;
};

constexpr MultimodalType kMultimodalTypes[] = {
    {"gemma3",
     "Gemma3ForConditionalGeneration",
     true,
     {{"gemma3_text", "Gemma3ForCausalLM"}},
     "{}"},
    {"mistral3",
     "Mistral3ForConditionalGeneration",
     false,
     {{"mistral", "MistralForCausalLM"},
      {"ministral", "MinistralForCausalLM"},
      {"ministral3", "Ministral3ForCausalLM"}},
     R"({"model_type": "mistral", "attention_dropout": 0.0, "head_dim": 128,
         "hidden_act": "silu", "hidden_size": 5120, "initializer_range": 0.02,
         "intermediate_size": 32768, "max_position_embeddings": 131072,
         "num_attention_heads": 32, "num_hidden_layers": 40, "num_key_value_heads": 8,
         "rms_norm_eps": 1e-05, "rope_theta": 1000000000.0, "sliding_window": null,
         "use_cache": true, "vocab_size": 131072})"},
};

const MultimodalType* multimodal_type(std::string_view name) {
  for (const MultimodalType& m : kMultimodalTypes)
    if (m.name == name) return &m;
  return nullptr;
}

}  // namespace

bool is_multimodal_type(std::string_view model_type) {
  return multimodal_type(model_type) != nullptr;
}

ModelConfig parse_multimodal_config(const Json& json, const std::string& source) {
  const Reader r(json, source);
  const MultimodalType& m = *multimodal_type(r.string("model_type", ""));
  const Json* inner = r.get("text_config");
  if (inner && !inner->is_object())
    r.bad("text_config", "expected an object, got " + json_type_name(*inner));
  Json text = inner ? *inner : Json::parse(m.absent_text_config);
  const TextType* type = &m.text_types[0];
  if (!m.text_type_fixed && text.contains("model_type")) {
    const std::string text_source = source + " (text_config)";
    const Reader tr(text, text_source);
    const std::string name = tr.string("model_type", "");
    type = nullptr;
    std::string accepted;
    for (const TextType& t : m.text_types) {
      if (t.model_type.empty()) continue;
      if (t.model_type == name) type = &t;
      accepted += (accepted.empty() ? "" : ", ") + std::string(t.model_type);
    }
    if (!type)
      tr.bad("model_type",
             "a " + std::string(m.wrapper_architecture) + " text model '" + name +
                 "' is not supported",
             "sft reads these text models there: " + accepted);
  }
  text["model_type"] = type->model_type;
  if (json.contains("tie_word_embeddings"))
    text["tie_word_embeddings"] = json["tie_word_embeddings"];
  for (const char* key : {"dtype", "torch_dtype", "bos_token_id", "eos_token_id", "pad_token_id"})
    if (json.contains(key) && !text.contains(key)) text[key] = json[key];
  ModelConfig c = parse_model_config(text, source + " (text_config)");
  c.architectures = {std::string(type->architecture)};  // the text model sft loads and exports
  c.final_logit_softcapping = 0;
  return c;
}

}  // namespace sft::config_detail
