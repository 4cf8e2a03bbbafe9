// `sft merge --adapter DIR --output_dir OUT [--dtype float32|bfloat16|float16|auto]`: a PEFT
// LoRA adapter folded into its base model, written as a full HF model folder — what PEFT's
// merge_and_unload() followed by save_pretrained (and the tokenizer's) writes: every adapted
// weight W + scale · B A (computed in fp32, then saved in the dtype asked), modules_to_save
// copies in place of their base tensors, the base's config.json / generation_config.json and
// the tokenizer files (the adapter folder's when it has them, else the base's).
//
// The base is the adapter's base_model_name_or_path (a folder, or a Hub id in the cache), or
// --base to point elsewhere (its shapes are checked against the adapter). After writing, the
// folder is reloaded and its logits compared with the in-memory merged model (verify_export).
//
// QLoRA: when the base folder is a bitsandbytes 4-bit checkpoint, or with --load_in_4bit (and
// --bnb_4bit_quant_type / --use_bnb_nested_quant as `sft train` took them), the adapter is
// folded into the dequantized base (model/quant4_dequantize.h): the weights the adapter was
// trained on, written in --dtype (float32 or bfloat16) as a plain HF model.
#include <cstdio>
#include <string>

#include "cli/command_line.h"
#include "cli/command_registry.h"
#include "core/error.h"
#include "core/log.h"
#include "io/options.h"
#include "model/model_dir.h"
#include "model/quant4_dequantize.h"
#include "model/transformer.h"
#include "train/adapter_io.h"
#include "train/args.h"
#include "train/export.h"
#include "train/quant_args.h"

namespace sft::cli {

namespace {

constexpr const char* kUsage =
    "usage: sft merge --adapter ADAPTER_DIR --output_dir OUT [--base MODEL] [--dtype DTYPE]\n\n"
    "Folds a PEFT LoRA adapter into its base model and writes a full HF model folder\n"
    "(PEFT's merge_and_unload() + save_pretrained).\n";

struct MergeFlags {
  std::string adapter, output_dir, base, dtype = "float32";
  std::string max_shard_size = "5GB";
  QuantArgs quant;
};

OptionSet merge_options(MergeFlags& f) {
  OptionSet o("merge");
  o.add_string("adapter", &f.adapter, "input", "PEFT adapter folder (adapter_config.json, ...)");
  o.add_string("base", &f.base, "input",
               "base model folder or Hub id (default: the adapter's base_model_name_or_path)");
  o.add_string("output_dir", &f.output_dir, "output", "where the merged model is written");
  o.add_string("dtype", &f.dtype, "output",
               "float32, bfloat16, float16, or auto (the base config's dtype)");
  o.add_string("max_shard_size", &f.max_shard_size, "output", "largest safetensors shard");
  add_quant_options(o, f.quant);
  return o;
}

int run_merge(const Args& args) {
  MergeFlags f;
  OptionSet options = merge_options(f);
  if (!parse_command_line("merge", kUsage, options, args)) return 0;
  if (f.adapter.empty() || f.output_dir.empty())
    fail_usage("merge", std::string("sft merge needs --adapter and --output_dir\n") + kUsage);
  if (!is_adapter_dir(f.adapter))
    fail_in_file("merge", {f.adapter, ""}, std::string("no ") + kAdapterConfigFile,
                 "give the folder `sft train --use_peft` (or PEFT's save_pretrained) wrote");

  ModelSource source = resolve_model_source(f.adapter);
  if (!f.base.empty()) source.model_dir = open_model_dir(f.base).path;
  model::LoraConfig lora = read_adapter_config(f.adapter);
  std::vector<std::string> notices;
  validate_quant_args(f.quant, true, notices);
  const std::optional<model::Quant4Plan> quant4 =
      quant4_plan_for(f.quant, "float32", true, source.model_dir);
  model::Transformer m =
      quant4 ? model::dequantized_model(model::Transformer::load_4bit(source.model_dir, *quant4))
             : model::Transformer::load(source.model_dir);
  m.enable_lora(lora, 0, f.adapter + "/" + kAdapterConfigFile);
  load_adapter_weights(m, f.adapter);
  const size_t adapters = m.lora()->adapters().size() + m.lora()->expert_adapters().size();
  m.merge_lora();

  TrainingArgs targs;  // the export options take --dtype and --max_shard_size as train does
  targs.dtype = f.dtype;
  targs.max_shard_size = f.max_shard_size;
  const ExportOptions ex = export_options_from_args(targs, source.model_dir, source.tokenizer_dir);
  export_hf_model(m, f.output_dir, ex);
  verify_export(m, f.output_dir, ex.dtype);
  std::fprintf(stderr, "merged %zu LoRA adapters (r %lld) into %s; saved to %s\n", adapters,
               static_cast<long long>(lora.r), source.model_dir.c_str(), f.output_dir.c_str());
  return 0;
}

}  // namespace

SFT_REGISTER_COMMAND("merge", "fold a LoRA adapter into its base model (sft merge --help)",
                     run_merge);

}  // namespace sft::cli
