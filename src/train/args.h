// TrainingArgs: everything `sft train` is told, under the names and defaults of TRL's
// SFTConfig (which extends transformers' TrainingArguments), TRL's ModelConfig and
// ScriptArguments, so a `trl sft` command line or YAML config works unchanged.
//
// Flags that transformers 5 removed but TRL users still pass (warmup_ratio, logging_dir,
// overwrite_output_dir) are accepted with their old meaning. Flags specific to sft.cpp are
// in their own group. Every other TRL field is in train/args_trl_flags.h: accepted with a
// one-line notice where it has no meaning here, or refused with the reason. All mistakes are
// usage errors (exit 2).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "io/json.h"
#include "io/options.h"
#include "train/quant_args.h"

namespace sft {

struct TrainingArgs {
  // Model (TRL ModelConfig)
  std::string model_name_or_path;
  std::string model_revision = "main";
  std::string dtype = "float32";
  std::optional<std::string> attn_implementation;  // eager/sdpa/flash_attention_*: a notice
  bool use_peft = false;
  int64_t lora_r = 16;
  int64_t lora_alpha = 32;
  double lora_dropout = 0.05;
  std::vector<std::string> lora_target_modules;
  std::vector<std::string> lora_modules_to_save;
  std::vector<std::string> lora_target_parameters;  // expert stacks (PEFT's target_parameters)
  bool use_rslora = false;
  bool use_dora = false;                     // refused: DoRA is not implemented
  std::string lora_task_type = "CAUSAL_LM";  // the only task sft trains
  QuantArgs quant;  // QLoRA: --load_in_4bit, --bnb_4bit_* (train/quant_args.h)

  // Data (TRL ScriptArguments + SFTConfig)
  std::string dataset_name;
  Json datasets;  // DatasetMixtureConfig's list (data/mixture.h); when set, dataset_name is ignored
  std::optional<std::string> dataset_config;
  std::string dataset_train_split = "train";
  std::string dataset_test_split = "test";
  bool dataset_streaming = false;
  std::string dataset_text_field = "text";
  std::vector<std::string> dataset_columns;  // "prompt=question", ... (sft.cpp)
  std::optional<int64_t> dataset_num_proc;
  std::optional<std::string> chat_template_path;
  std::optional<std::string> eos_token;
  std::optional<std::string> pad_token;
  std::optional<int64_t> max_length = 1024;
  std::string truncation_mode = "keep_start";
  bool shuffle_dataset = false;
  bool packing = false;
  std::string packing_strategy = "bfd";
  bool padding_free = false;
  std::optional<int64_t> pad_to_multiple_of;
  std::optional<bool> eval_packing;
  std::optional<bool> completion_only_loss;
  bool assistant_only_loss = false;
  std::string loss_type = "nll";
  bool skip_invalid_rows = false;  // sft.cpp
  double eval_split_ratio =
      0.0;  // sft.cpp: hold out a fraction of train when there is no test split
  std::optional<double> test_split_size;  // DatasetMixtureConfig: a fraction → eval_split_ratio
  Json model_init_kwargs;                 // its dtype/torch_dtype sets --dtype
  // Mixtures of experts (train/moe_args.h): SFTConfig's coefficient, and the one
  // --model_init_kwargs sets on the model config.
  std::optional<double> router_aux_loss_coef;
  std::optional<double> init_router_aux_loss_coef;
  std::optional<double> neftune_noise_alpha;

  // Training (TrainingArguments, with SFTConfig's defaults)
  std::string output_dir = "trainer_output";  // TrainingArguments' default, as `trl sft`
  bool overwrite_output_dir = false;
  double num_train_epochs = 3.0;
  int64_t max_steps = -1;
  int64_t per_device_train_batch_size = 8;
  int64_t per_device_eval_batch_size = 8;
  int64_t gradient_accumulation_steps = 1;
  bool gradient_checkpointing = true;
  // sft's own: with checkpointing, also keep each layer's MLP gate and up products (more memory,
  // a third less recomputation; Transformer::set_checkpoint_keeps_mlp).
  bool gradient_checkpointing_keep_mlp = false;
  int64_t seed = 42;
  std::optional<int64_t> data_seed;
  std::string train_sampling_strategy = "random";  // or "sequential" (transformers 5.x)
  std::optional<bool> bf16;                        // SFTConfig: None means "bf16 unless fp16"
  bool fp16 = false;
  bool use_cpu = false;                // the CPU even with a GPU (train/device_choice.h)
  Json gradient_checkpointing_kwargs;  // accepted; sft.cpp's recompute has no options

  // Optimizer and schedule
  double learning_rate = 2e-5;
  std::string lr_scheduler_type = "linear";
  Json lr_scheduler_kwargs;
  double warmup_steps = 0;  // >= 1 a count, < 1 a fraction of the steps
  double warmup_ratio = 0;  // older spelling of a fractional warmup
  double weight_decay = 0.0;
  double adam_beta1 = 0.9;
  double adam_beta2 = 0.999;
  double adam_epsilon = 1e-8;
  double max_grad_norm = 1.0;
  std::string optim = "adamw_torch";

  // Logging, evaluation and saving
  double logging_steps = 10;  // >= 1 a count, < 1 a fraction of the steps
  bool logging_first_step = false;
  std::string logging_strategy = "steps";
  std::optional<std::string> logging_dir;
  std::vector<std::string> report_to = {"none"};
  std::optional<std::string> run_name;
  std::string eval_strategy = "no";
  std::optional<double> eval_steps;
  std::string save_strategy = "steps";
  double save_steps = 500;
  std::optional<int64_t> save_total_limit;
  bool save_only_model = false;
  std::optional<std::string> resume_from_checkpoint;
  std::optional<bool> disable_tqdm;
  bool eval_on_start = false;
  std::string log_level = "passive";  // passive keeps SFT_LOG_LEVEL / info

  // Hub (transformers' TrainingArguments): publish output_dir when training ends
  bool push_to_hub = false;
  std::optional<std::string>
      hub_model_id;  // default: the output_dir's name, in the token's namespace
  bool hub_private_repo = false;
  std::string hub_strategy = "every_save";
  std::optional<std::string> hub_token;

  // sft.cpp
  std::string max_shard_size = "5GB";
  bool init_from_config = false;
  bool skip_nonfinite_steps = false;
  std::optional<int64_t> num_threads;

  // Distributed (torchrun's, accelerate's and TrainingArguments' names)
  std::optional<int64_t> nproc_per_node;         // re-launch under mpirun with this many ranks
  int64_t zero_stage = 0;                        // 0: plain data parallel, 1-3: ZeRO stage
  std::optional<std::string> accelerate_config;  // TRL's names: zero1, zero3, multi_gpu, ...
  double ddp_timeout = 1800;                     // seconds one collective may take
  int64_t tp_size = 1;                           // tensor parallel ranks (TP_SIZE)
  int64_t ep_size = 1;                           // expert parallel ranks (train/moe_args.h)
  std::optional<int64_t> init_ep_size;           // --model_init_kwargs distributed_config's ep_size
  // TRL's other spellings of a stage (train/sharding_config.h), resolved into zero_stage.
  std::optional<std::string> fsdp;         // "full_shard auto_wrap", "shard_grad_op", ...
  std::optional<std::string> fsdp_config;  // a JSON file or inline object
  std::optional<std::string> deepspeed;    // a DeepSpeed JSON file or inline object
  // TRL flags kept only to compare with TRL's default (train/args_trl_flags.h), as given.
  std::map<std::string, std::string> trl_compat;
  // One line per flag accepted without effect, for cmd_train to print before any work.
  std::vector<std::string> notices;
};

// The option table bound to `args` (for parsing and for `sft train --help`).
OptionSet training_options(TrainingArgs& args);

// Parses a `sft train` command line (with --config YAML) and validates it; throws
// sft::UsageError("[args] ...") naming the offending flag (errors inside a YAML file are plain
// sft::Error naming the file and line).
TrainingArgs parse_training_args(const std::vector<std::string>& tokens);

// Checks values and relations between flags (and fills derived defaults such as bf16 = !fp16,
// --dtype from --model_init_kwargs); `given` says which flags were set explicitly (nullptr:
// none known). Adds the notices of accepted-without-effect flags to args.notices.
void validate_training_args(TrainingArgs& args, const OptionSet* given = nullptr);
// The distributed flags: the ZeRO stage and its spellings (args_sharding.h), tp_size ($TP_SIZE).
void validate_distributed_args(TrainingArgs& args);
// The LoRA flags (--use_peft, --lora_*, --use_dora): rank, dropout, task type, target names.
void validate_lora_args(const TrainingArgs& args);

// "5GB", "500MB", "1024" → bytes (as transformers' convert_file_size_to_int: GB = 10^9, GiB =
// 2^30).
uint64_t parse_size_bytes(const std::string& text);

}  // namespace sft
