// Where a checkpoint keeps the text decoder sft trains. A text-only model stores it under its own
// names (model.layers.0..., lm_head.weight); a multimodal folder (Gemma3ForConditionalGeneration,
// Mistral3ForConditionalGeneration) stores it beside a vision tower and a projector, either as
// the Hub checkpoints and transformers 5's save_pretrained write it (language_model.model.*,
// language_model.lm_head.weight) or as transformers 5 names it in memory (model.language_model.*,
// lm_head.weight). sft's parameters always carry the text model's own names; this maps them to
// and from the stored ones, and lists the tensors of the other parts, which training leaves
// unchanged (TRL trains the whole model, but those parts get no gradient from text-only rows)
// and the export copies through.
#pragma once

#include <string>
#include <vector>

#include "io/safetensors.h"

namespace sft::model {

struct TextModelNames {
  std::string body = "model.";             // the stored prefix of the text model's model.*
  std::string lm_head = "lm_head.weight";  // the stored name of lm_head.weight

  bool multimodal() const { return body != "model."; }
  // model.X → body + X, lm_head.weight → lm_head.
  std::string stored(const std::string& text_name) const;
  // The inverse; "" for a tensor of another part (vision tower, projector).
  std::string text_name(const std::string& stored_name) const;
};

// The layout `ckpt` uses, told by where its token embedding is.
TextModelNames text_model_names(const SafetensorsCheckpoint& ckpt);

// The checkpoint's text model under the text model's own names (itself when text-only).
SafetensorsCheckpoint text_model_view(SafetensorsCheckpoint ckpt, const TextModelNames& names);

// Whether the weights in model folder `dir` hold a text model beside other parts.
bool is_multimodal_folder(const std::string& dir);

// The stored names of the tensors that are not the text model's, in sorted order.
std::vector<std::string> other_parts(const SafetensorsCheckpoint& ckpt,
                                     const TextModelNames& names);

}  // namespace sft::model
