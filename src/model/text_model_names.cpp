// See text_model_names.h.
#include "model/text_model_names.h"

namespace sft::model {

namespace {

constexpr const char* kTextBody = "model.";

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

std::string TextModelNames::stored(const std::string& text_name) const {
  if (text_name == "lm_head.weight") return lm_head;
  if (starts_with(text_name, kTextBody)) return body + text_name.substr(sizeof("model.") - 1);
  return text_name;
}

std::string TextModelNames::text_name(const std::string& stored_name) const {
  if (stored_name == lm_head) return "lm_head.weight";
  if (starts_with(stored_name, body)) return kTextBody + stored_name.substr(body.size());
  return "";
}

TextModelNames text_model_names(const SafetensorsCheckpoint& ckpt) {
  if (ckpt.contains("model.embed_tokens.weight")) return {};
  if (ckpt.contains("language_model.model.embed_tokens.weight"))
    return {"language_model.model.", "language_model.lm_head.weight"};
  if (ckpt.contains("model.language_model.embed_tokens.weight"))
    return {"model.language_model.", "lm_head.weight"};
  return {};  // neither: the layout check names what is missing
}

SafetensorsCheckpoint text_model_view(SafetensorsCheckpoint ckpt, const TextModelNames& names) {
  if (!names.multimodal()) return ckpt;
  return SafetensorsCheckpoint::renamed(
      std::move(ckpt), [&](const std::string& name) { return names.text_name(name); });
}

bool is_multimodal_folder(const std::string& dir) {
  return text_model_names(SafetensorsCheckpoint::open_dir(dir)).multimodal();
}

std::vector<std::string> other_parts(const SafetensorsCheckpoint& ckpt,
                                     const TextModelNames& names) {
  std::vector<std::string> out;
  if (!names.multimodal()) return out;
  for (const std::string& name : ckpt.names())
    if (names.text_name(name).empty()) out.push_back(name);
  return out;
}

}  // namespace sft::model
