// The final HF-format model folder a run leaves in output_dir (and the model part of each
// checkpoint): what transformers' save_pretrained + tokenizer.save_pretrained would write.
//
//   config.json             the source model's config.json (or, without one, the config
//                           serialized); eos/pad ids updated, "dtype" = the saved dtype
//   generation_config.json  the source's (or GenerationConfig.from_model_config's) with the
//                           --eos_token id put first in eos_token_id and pad_token_id set,
//                           as TRL's SFTTrainer does
//   model.safetensors       or model-0000i-of-0000n.safetensors + index past max_shard_size
//   tokenizer.json, tokenizer_config.json (eos_token updated), chat_template.jinja and the
//   other tokenizer files the source folder had, copied
//
// The pad token follows TRL: --pad_token, else the tokenizer's, else the eos token; it is
// written to tokenizer_config.json, config.json and generation_config.json when a tokenizer
// folder is given. Stale weight files of an earlier export in out_dir are removed (as
// save_pretrained does). Every file is written atomically. verify_export reloads the written folder
// and compares logits on fixed inputs with the in-memory model; a mismatch is an error.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "core/dtype.h"
#include "model/transformer.h"

namespace sft {

struct ExportOptions {
  std::string tokenizer_dir;     // where tokenizer.json etc. come from ("" = none)
  std::string source_model_dir;  // its config.json/generation_config.json are the base ("" = none)
  std::optional<std::string> eos_token;  // --eos_token
  std::optional<std::string> pad_token;  // --pad_token
  // --chat_template_path: a template file, or a tokenizer folder whose template is taken.
  std::optional<std::string> chat_template_path;
  DType dtype = DType::kF32;
  uint64_t max_shard_bytes = 5'000'000'000;
  // A mixture of experts: the load-balancing coefficient the run trained with, written to
  // config.json with output_router_logits = (coefficient != 0), as TRL's SFTTrainer sets both
  // on the model config it saves (train/moe_args.h). nullopt: the config's keys as they are.
  std::optional<double> router_aux_loss_coef;
};

// The options a run's flags imply: --eos_token, --pad_token, --chat_template_path,
// --max_shard_size (parse_size_bytes) and the saved dtype from --dtype, as TRL saves the model
// in the dtype it was loaded in ("auto" = the source config's dtype, else float32).
// `model_dir` / `tokenizer_dir` are the resolved source folders ("" = none).
struct TrainingArgs;
ExportOptions export_options_from_args(const TrainingArgs& args, const std::string& model_dir,
                                       const std::string& tokenizer_dir);

// A model whose trainable arena is sharded over ranks (ZeRO-3): given one of its tensors (a
// borrowed view of the arena: its data pointer is its place), that tensor's whole fp32 values,
// valid until the next call (optim/zero_stream.h gathers them from the ranks). Empty: the
// model's tensors are whole in memory.
using WholeTensor = std::function<const float*(const Tensor& view)>;

// The weights are written a tensor at a time (each converted to the saved dtype when the
// writer reaches it, through `whole` when given), so the export holds one tensor beyond the
// model; the bytes are the same either way.
void export_hf_model(const model::Transformer& model, const std::string& out_dir,
                     const ExportOptions& options, const WholeTensor& whole = {});

// A LoRA model's output as TRL + PEFT leave it (train/adapter_io.h): adapter_config.json and
// adapter_model.safetensors (F32, the adapters' training dtype, as PEFT saves them) and the
// tokenizer files with the chat template, as export_hf_model writes them; no base weights.
// verify_adapter_export reloads the tensors and checks them bit for bit.
void export_peft_adapter(const model::Transformer& model, const std::string& out_dir,
                         const ExportOptions& options, const WholeTensor& whole = {});
void verify_adapter_export(const model::Transformer& model, const std::string& dir);

// Reloads `dir`, checks every weight equals the in-memory one rounded to `dtype` (bit for
// bit), then compares logits on a fixed token sequence with `model`'s: bit-identical for F32;
// for BF16/F16 `model` runs with its weights temporarily rounded the same way, so the logits
// must again be identical. Throws sft::Error("[export] ...") on a mismatch. Runs forward on
// `model` (its saved activations are overwritten); peak memory ≈ 2× the parameters.
void verify_export(model::Transformer& model, const std::string& dir, DType dtype);

}  // namespace sft
