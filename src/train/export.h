// The final HF-format model folder a run leaves in output_dir (and the model part of each
// checkpoint): what transformers' save_pretrained + tokenizer.save_pretrained would write.
//
//   config.json             the model's config (eos_token_id updated for --eos_token)
//   generation_config.json  bos/eos/pad ids; the --eos_token id put first in eos_token_id,
//                           as TRL does
//   model.safetensors       or model-0000i-of-0000n.safetensors + index past max_shard_size
//   tokenizer.json, tokenizer_config.json (eos_token updated), chat_template.jinja and the
//   other tokenizer files the source folder had, copied
//
// Every file is written atomically. verify_export reloads the written folder and compares
// logits on fixed inputs with the in-memory model; a mismatch is an error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/dtype.h"
#include "model/transformer.h"

namespace sft {

struct ExportOptions {
  std::string tokenizer_dir;  // where tokenizer.json etc. come from ("" = none)
  std::string source_model_dir;  // its config.json/generation_config.json are the base ("" = none)
  std::optional<std::string> eos_token;  // --eos_token
  std::optional<std::string> chat_template_path;  // --chat_template_path replaces the template
  DType dtype = DType::kF32;
  uint64_t max_shard_bytes = 5'000'000'000;
};

void export_hf_model(const model::Transformer& model, const std::string& out_dir,
                     const ExportOptions& options);

// Reloads `dir` and compares logits on a fixed token sequence with `model` (exact for F32,
// bf16/f16 rounding otherwise); throws sft::Error("[export] ...") on a mismatch.
void verify_export(model::Transformer& model, const std::string& dir, DType dtype);

}  // namespace sft
