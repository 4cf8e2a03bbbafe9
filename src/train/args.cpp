#include "train/args.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/error.h"
#include "data/mixture.h"
#include "optim/schedule.h"
#include "train/adapter_io.h"
#include "train/args_sharding.h"
#include "train/args_trl_flags.h"
#include "train/moe_args.h"

namespace sft {

namespace {

constexpr std::string_view kComponent = "args";

void require_one_of(const std::string& flag, const std::string& value,
                    std::initializer_list<const char*> valid) {
  for (const char* v : valid) {
    if (value == v) return;
  }
  std::string list;
  for (const char* v : valid) list += (list.empty() ? "" : ", ") + std::string(v);
  fail_usage(kComponent, "--" + flag + " '" + value + "' is not one of: " + list);
}

// A number as the user wrote it: 0.001 and 1e-06, not std::to_string's "0.001000", "0.000001".
std::string number_text(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", value);
  return buf;
}

void require_positive(const std::string& flag, double value) {
  if (!(value > 0))
    fail_usage(kComponent, "--" + flag + " must be positive, got " + number_text(value));
}

// Integer flags say "got 0", not "got 0.000000".
void require_positive(const std::string& flag, int64_t value) {
  if (value <= 0)
    fail_usage(kComponent, "--" + flag + " must be positive, got " + std::to_string(value));
}

// An error's text without its "[component] " prefix, to rethrow it as a usage error.
std::string message_of(const Error& e) {
  const std::string text = e.what();
  const size_t cut = e.component().size() + 3;
  return text.size() > cut ? text.substr(cut) : text;
}

// The TRL fields that map onto others or only earn a notice (see args_trl_flags.h).
void validate_trl_extras(TrainingArgs& a, const OptionSet* given) {
  auto set = [&](const char* name) { return given != nullptr && given->was_set(name); };
  if (a.attn_implementation) {
    require_one_of("attn_implementation", *a.attn_implementation,
                   {"eager", "sdpa", "flash_attention_2", "flash_attention_3", "flex_attention"});
    a.notices.push_back("--attn_implementation " + *a.attn_implementation +
                        " has no effect in sft.cpp: it always uses its own exact attention kernel");
  }
  if (a.gradient_checkpointing_kwargs.is_object() && !a.gradient_checkpointing_kwargs.empty()) {
    a.notices.push_back("--gradient_checkpointing_kwargs " +
                        a.gradient_checkpointing_kwargs.dump() +
                        " has no effect in sft.cpp: its recompute takes no options");
  }
  if (a.model_init_kwargs.is_object()) {
    for (const auto& [key, value] : a.model_init_kwargs.items()) {
      if (key == "dtype" || key == "torch_dtype") {
        if (!value.is_string())
          fail_usage(kComponent,
                     "--model_init_kwargs: " + key + " must be a string such as \"bfloat16\"");
        if (!set("dtype")) a.dtype = value.get<std::string>();
      } else if (!take_moe_init_kwarg(a, key, value)) {
        a.notices.push_back("--model_init_kwargs key '" + key +
                            "' has no effect in sft.cpp (only dtype and the router's keys are "
                            "used)");
      }
    }
  }
  require_one_of("dtype", a.dtype, {"auto", "float32", "bfloat16", "float16"});
  if (a.neftune_noise_alpha && !(*a.neftune_noise_alpha >= 0))
    fail_usage(kComponent, "--neftune_noise_alpha must be >= 0");
  if (a.test_split_size) {
    if (!(*a.test_split_size > 0 && *a.test_split_size < 1))
      fail_usage(kComponent,
                 "--test_split_size: only a fraction in (0, 1) is supported (it holds "
                 "out that share of the prepared rows, as --eval_split_ratio)");
    if (a.eval_split_ratio == 0) a.eval_split_ratio = *a.test_split_size;
  }
}

}  // namespace

OptionSet training_options(TrainingArgs& a) {
  OptionSet o("train");
  const std::string model = "Model", data = "Data", training = "Training",
                    optim = "Optimizer and schedule", logging = "Logging, evaluation and saving",
                    lora = "LoRA (PEFT)", ours = "sft.cpp";
  o.add_string("model_name_or_path", &a.model_name_or_path, model,
               "model folder or Hub id (in the HF cache)");
  o.add_string("model_revision", &a.model_revision, model, "Hub revision: branch, tag or commit");
  o.add_string("dtype", &a.dtype, model,
               "dtype to load weights in (master weights are fp32 on CPU)");
  o.add_optional_string("attn_implementation", &a.attn_implementation, model,
                        "eager, sdpa or flash_attention_2: accepted; sft.cpp has its own kernel");
  o.add_json("model_init_kwargs", &a.model_init_kwargs, model,
             "JSON; its dtype (or torch_dtype) sets --dtype, router_aux_loss_coef the "
             "load-balancing loss's weight; other keys have no effect");

  o.add_string("dataset_name", &a.dataset_name, data,
               "file (.jsonl/.json/.parquet), folder, glob or Hub dataset id");
  o.add_optional_string("dataset_config", &a.dataset_config, data,
                        "dataset configuration (subset) name");
  o.add_string("dataset_train_split", &a.dataset_train_split, data, "split to train on");
  o.add_string("dataset_test_split", &a.dataset_test_split, data, "split to evaluate on");
  o.add_bool("dataset_streaming", &a.dataset_streaming, data,
             "accepted for compatibility; data is prepared once");
  o.add_string("dataset_text_field", &a.dataset_text_field, data,
               "column with the text of language-modeling rows");
  o.add_string_list("dataset_columns", &a.dataset_columns, data,
                    "column mapping, e.g. prompt=question,completion=answer");
  o.add_optional_int("dataset_num_proc", &a.dataset_num_proc, data,
                     "threads for data preparation (default: all cores)");
  o.add_optional_string("chat_template_path", &a.chat_template_path, data,
                        "Jinja file or tokenizer folder with the template");
  o.add_optional_string("eos_token", &a.eos_token, data,
                        "token that ends each turn/sample (replaces the tokenizer's)");
  o.add_optional_string("pad_token", &a.pad_token, data,
                        "padding token (default: the tokenizer's, else EOS)");
  o.add_optional_int("max_length", &a.max_length, data,
                     "truncate (or, with packing, pack) to this many tokens");
  o.add_string("truncation_mode", &a.truncation_mode, data, "keep_start or keep_end");
  o.add_bool("shuffle_dataset", &a.shuffle_dataset, data,
             "shuffle the dataset once before preparation");
  o.add_bool("packing", &a.packing, data, "pack several samples per row (padding-free)");
  o.add_string("packing_strategy", &a.packing_strategy, data, "bfd, bfd_split or wrapped");
  o.add_bool("padding_free", &a.padding_free, data,
             "flatten batches without padding even without packing");
  o.add_optional_int("pad_to_multiple_of", &a.pad_to_multiple_of, data,
                     "pad row lengths to a multiple of this (auto: none on CPU, as TRL)", "auto");
  o.add_optional_bool("eval_packing", &a.eval_packing, data,
                      "pack the eval set (default: as --packing)");
  o.add_optional_bool("completion_only_loss", &a.completion_only_loss, data,
                      "train only on completions (default: on for prompt-completion data)");
  o.add_bool("assistant_only_loss", &a.assistant_only_loss, data, "train only on assistant turns");
  o.add_string("loss_type", &a.loss_type, data, "nll");
  o.add_float("eval_split_ratio", &a.eval_split_ratio, data,
              "hold out this fraction of train for eval");
  o.add_json("datasets", &a.datasets, data,
             "a mixture: a JSON list (or a `datasets:` YAML list) of {path, name, data_dir, "
             "data_files, split, columns, fraction}, concatenated in order as TRL's get_dataset",
             /*allow_array=*/true);
  o.add_optional_float("test_split_size", &a.test_split_size, data,
                       "as --eval_split_ratio (a fraction of the prepared rows)");
  o.add_optional_float("neftune_noise_alpha", &a.neftune_noise_alpha, data,
                       "NEFTune: uniform noise on the embeddings in training, scaled by "
                       "alpha/sqrt(length*hidden)");
  o.add_optional_float("router_aux_loss_coef", &a.router_aux_loss_coef, training,
                       "mixture of experts: the load-balancing loss's weight (default: the model "
                       "config's; 0 = off)");

  o.add_string("output_dir", &a.output_dir, training,
               "where checkpoints, logs and the final model go");
  o.add_bool("overwrite_output_dir", &a.overwrite_output_dir, training,
             "allow a non-empty output_dir");
  o.add_float("num_train_epochs", &a.num_train_epochs, training, "epochs (may be fractional)");
  o.add_int("max_steps", &a.max_steps, training,
            "optimizer steps; overrides num_train_epochs when > 0");
  o.add_int("per_device_train_batch_size", &a.per_device_train_batch_size, training,
            "rows per micro-batch per rank");
  o.add_int("per_device_eval_batch_size", &a.per_device_eval_batch_size, training,
            "rows per eval batch per rank");
  o.add_int("gradient_accumulation_steps", &a.gradient_accumulation_steps, training,
            "micro-batches per optimizer step");
  o.add_bool("gradient_checkpointing", &a.gradient_checkpointing, training,
             "recompute activations in backward");
  o.add_int("seed", &a.seed, training, "seed for init, shuffling and sampling");
  o.add_optional_int("data_seed", &a.data_seed, training, "seed for data order (default: --seed)");
  o.add_string("train_sampling_strategy", &a.train_sampling_strategy, training,
               "random (seeded shuffle per epoch) or sequential (dataset order every epoch)");
  o.add_optional_bool("bf16", &a.bf16, training,
                      "bf16 matmul inputs, fp32 accumulation and master weights");
  o.add_bool("fp16", &a.fp16, training, "fp16 mixed precision (GPU only)");
  o.add_bool("use_cpu", &a.use_cpu, training,
             "train on the CPU even where a CUDA build sees a GPU (train/device_choice.h)");
  o.add_json("gradient_checkpointing_kwargs", &a.gradient_checkpointing_kwargs, training,
             "accepted (JSON); sft.cpp's recompute takes no options");

  o.add_float("learning_rate", &a.learning_rate, optim, "peak learning rate");
  o.add_string("lr_scheduler_type", &a.lr_scheduler_type, optim,
               "linear, cosine, cosine_with_min_lr, constant, constant_with_warmup, inverse_sqrt, "
               "warmup_stable_decay");
  o.add_json("lr_scheduler_kwargs", &a.lr_scheduler_kwargs, optim,
             "extra scheduler arguments as JSON");
  o.add_float("warmup_steps", &a.warmup_steps, optim,
              "warmup steps (>= 1) or fraction of the steps (< 1)");
  o.add_float("warmup_ratio", &a.warmup_ratio, optim, "fraction of the steps to warm up over");
  o.add_float("weight_decay", &a.weight_decay, optim,
              "AdamW weight decay (not applied to norms and biases)");
  o.add_float("adam_beta1", &a.adam_beta1, optim, "AdamW beta1");
  o.add_float("adam_beta2", &a.adam_beta2, optim, "AdamW beta2");
  o.add_float("adam_epsilon", &a.adam_epsilon, optim, "AdamW epsilon");
  o.add_float("max_grad_norm", &a.max_grad_norm, optim,
              "clip the global gradient norm (0 disables)");
  o.add_string("optim", &a.optim, optim, "adamw_torch (adamw_torch_fused is accepted as the same)");

  o.add_float("logging_steps", &a.logging_steps, logging,
              "log every N steps (or a fraction of the steps)");
  o.add_bool("logging_first_step", &a.logging_first_step, logging, "also log the first step");
  o.add_string("logging_strategy", &a.logging_strategy, logging, "steps, epoch or no");
  o.add_optional_string("logging_dir", &a.logging_dir, logging,
                        "TensorBoard folder (default: output_dir/runs/...)");
  o.add_string_list("report_to", &a.report_to, logging,
                    "none, all, tensorboard, wandb (comma-separated)");
  o.add_optional_string("run_name", &a.run_name, logging, "name of the run in logs");
  o.add_string("eval_strategy", &a.eval_strategy, logging, "no, steps or epoch");
  o.add_optional_float("eval_steps", &a.eval_steps, logging,
                       "evaluate every N steps (default: logging_steps)");
  o.add_string("save_strategy", &a.save_strategy, logging, "steps, epoch, best or no");
  o.add_float("save_steps", &a.save_steps, logging,
              "save a checkpoint every N steps (or a fraction of the steps)");
  o.add_optional_int("save_total_limit", &a.save_total_limit, logging,
                     "keep at most this many checkpoints");
  o.add_bool("save_only_model", &a.save_only_model, logging,
             "checkpoints without optimizer state (cannot resume)");
  o.add_optional_string("resume_from_checkpoint", &a.resume_from_checkpoint, logging,
                        "checkpoint folder, or true for the latest in output_dir");
  o.add_optional_bool("disable_tqdm", &a.disable_tqdm, logging,
                      "plain log lines instead of a progress bar");
  o.add_bool("eval_on_start", &a.eval_on_start, logging, "evaluate once before the first step");
  o.add_string("log_level", &a.log_level, logging,
               "passive, debug, info, warning, error or critical");

  const std::string hub = "Hub";
  o.add_bool("push_to_hub", &a.push_to_hub, hub, "upload output_dir to a Hub model repo");
  o.add_optional_string("hub_model_id", &a.hub_model_id, hub,
                        "ORG/NAME or NAME (default: output_dir's name under the token's user)");
  o.add_bool("hub_private_repo", &a.hub_private_repo, hub, "create the repo private");
  o.add_string("hub_strategy", &a.hub_strategy, hub,
               "end, or every_save: also each checkpoint's model files");
  o.add_optional_string("hub_token", &a.hub_token, hub,
                        "token with write access (default: HF_TOKEN)");

  o.add_bool("use_peft", &a.use_peft, lora,
             "train LoRA adapters (PEFT) instead of all weights; the base stays frozen");
  o.add_int("lora_r", &a.lora_r, lora, "LoRA rank");
  o.add_int("lora_alpha", &a.lora_alpha, lora, "LoRA alpha (scale = alpha / r)");
  o.add_float("lora_dropout", &a.lora_dropout, lora, "dropout on the LoRA input");
  o.add_string_list(
      "lora_target_modules", &a.lora_target_modules, lora,
      "projections to adapt, comma-separated (q_proj,k_proj,v_proj,o_proj,gate_proj,"
      "up_proj,down_proj) or all-linear; None = PEFT's per-architecture q_proj,v_proj");
  o.add_string_list("lora_target_parameters", &a.lora_target_parameters, lora,
                    "mixture-of-experts stacks to adapt as PEFT's target_parameters, e.g. "
                    "mlp.experts.gate_up_proj mlp.experts.down_proj (needs --lora_dropout 0)");
  o.add_string_list("lora_modules_to_save", &a.lora_modules_to_save, lora,
                    "modules trained in full besides LoRA, comma-separated (e.g. lm_head)");
  o.add_bool("use_rslora", &a.use_rslora, lora, "rank-stabilised scale alpha / sqrt(r)");
  o.add_bool("use_dora", &a.use_dora, lora, "weight-decomposed LoRA (not supported: refused)");
  o.add_string("lora_task_type", &a.lora_task_type, lora, "PEFT task type (CAUSAL_LM only)");
  add_quant_options(o, a.quant);

  o.add_string("max_shard_size", &a.max_shard_size, ours,
               "largest safetensors shard of the exported model");
  o.add_bool("init_from_config", &a.init_from_config, ours,
             "random-initialise from config.json instead of loading weights");
  o.add_bool("skip_nonfinite_steps", &a.skip_nonfinite_steps, ours,
             "skip updates with a non-finite loss or grad norm");
  o.add_optional_int("num_threads", &a.num_threads, ours, "CPU threads (default: all cores)");
  o.add_bool("gradient_checkpointing_keep_mlp", &a.gradient_checkpointing_keep_mlp, ours,
             "with --gradient_checkpointing, keep every layer's MLP gate and up products too "
             "(2 x tokens x intermediate_size values a layer): backward recomputes neither");
  o.add_bool("skip_invalid_rows", &a.skip_invalid_rows, ours,
             "skip (and count) malformed dataset rows");

  const char* dist = "distributed";
  o.add_optional_int("nproc_per_node", &a.nproc_per_node, dist,
                     "run N processes on this host (re-launches under mpirun -np N)");
  o.add_int("zero_stage", &a.zero_stage, dist,
            "0: data parallel; 1: ZeRO-1 (Adam moments sharded over the ranks); 2: ZeRO-2 "
            "(gradients too); 3: ZeRO-3 (and the layers' parameters)");
  o.add_optional_string(
      "accelerate_config", &a.accelerate_config, dist,
      "TRL's accelerate config name: zero1, zero2, zero3, fsdp1, fsdp2, multi_gpu or "
      "single_gpu");
  o.add_optional_string("fsdp", &a.fsdp, dist,
                        "TrainingArguments' FSDP options: full_shard (ZeRO-3), shard_grad_op "
                        "(ZeRO-2), no_shard, offload, auto_wrap");
  o.add_optional_string("fsdp_config", &a.fsdp_config, dist,
                        "FSDP config, a JSON file or object (reshard_after_forward, "
                        "sharding_strategy; other keys ignored with a notice)");
  o.add_optional_string("deepspeed", &a.deepspeed, dist,
                        "DeepSpeed JSON file (or object): zero_optimization.stage; other keys "
                        "ignored with a notice");
  o.add_float("ddp_timeout", &a.ddp_timeout, dist,
              "seconds one collective may wait before every rank stops (0: never)");
  o.add_int("tp_size", &a.tp_size, dist,
            "tensor parallel ranks: Megatron's split of heads, MLP and vocabulary ($TP_SIZE when "
            "not given)");
  o.add_int("ep_size", &a.ep_size, dist,
            "expert parallel ranks: groups of this many data-parallel ranks split the experts "
            "(all-to-all of tokens); divides the world size and the experts");
  add_trl_compat_options(o, &a.trl_compat);
  return o;
}

TrainingArgs parse_training_args(const std::vector<std::string>& tokens) {
  TrainingArgs args;
  OptionSet options = training_options(args);
  std::vector<std::string> positional = options.parse(tokens);
  if (!positional.empty()) {
    fail_usage(kComponent,
               "sft train takes only --flags, got '" + positional.front() +
                   "' (hint: the model goes in --model_name_or_path, the data in --dataset_name)");
  }
  validate_training_args(args, &options);
  return args;
}

void validate_training_args(TrainingArgs& a, const OptionSet* given) {
  // First: a refused TRL flag (--datasets, --deepspeed, ...) explains more than what it lacks.
  check_trl_compat_values(a.trl_compat, a.notices);
  if (a.model_name_or_path.empty()) fail_usage(kComponent, "--model_name_or_path is required");
  // --datasets: TRL loads the mixture and ignores --dataset_name (with a warning).
  const bool mixture = !a.datasets.is_null() && !(a.datasets.is_array() && a.datasets.empty());
  if (mixture) {
    data::parse_mixture(a.datasets);  // every entry checked here, before any work
    if (!a.dataset_name.empty())
      a.notices.push_back("--dataset_name " + a.dataset_name +
                          " is ignored: --datasets is given (as in `trl sft`)");
  } else if (a.dataset_name.empty()) {
    fail_usage(kComponent, "--dataset_name (or a --datasets mixture) is required");
  }
  if (a.output_dir.empty())
    fail_usage(kComponent,
               "--output_dir cannot be empty (hint: leave it out for TRL's default, "
               "trainer_output)");
  if (a.gradient_checkpointing_keep_mlp && !a.gradient_checkpointing)
    a.notices.push_back(
        "--gradient_checkpointing_keep_mlp has no effect without --gradient_checkpointing: "
        "every activation is kept already");
  if (!a.bf16) a.bf16 = !a.fp16;  // SFTConfig: bf16 unless fp16 was asked for
  if (*a.bf16 && a.fp16) fail_usage(kComponent, "--bf16 and --fp16 are mutually exclusive");
  require_one_of("packing_strategy", a.packing_strategy, {"bfd", "bfd_split", "wrapped"});
  require_one_of("truncation_mode", a.truncation_mode, {"keep_start", "keep_end"});
  require_one_of("loss_type", a.loss_type, {"nll"});
  require_one_of("eval_strategy", a.eval_strategy, {"no", "steps", "epoch"});
  require_one_of("save_strategy", a.save_strategy, {"no", "steps", "epoch", "best"});
  require_one_of("logging_strategy", a.logging_strategy, {"no", "steps", "epoch"});
  require_one_of("optim", a.optim, {"adamw_torch", "adamw_torch_fused", "adamw"});
  require_one_of("train_sampling_strategy", a.train_sampling_strategy, {"random", "sequential"});
  require_positive("per_device_train_batch_size", a.per_device_train_batch_size);
  require_positive("per_device_eval_batch_size", a.per_device_eval_batch_size);
  require_positive("gradient_accumulation_steps", a.gradient_accumulation_steps);
  require_positive("learning_rate", a.learning_rate);
  require_positive("logging_steps", a.logging_steps);
  require_positive("save_steps", a.save_steps);
  if (a.max_steps <= 0) require_positive("num_train_epochs", a.num_train_epochs);
  if (a.max_length && *a.max_length <= 0)
    fail_usage(kComponent, "--max_length must be positive or None");
  if (a.packing && !a.max_length)
    fail_usage(kComponent, "--packing needs a --max_length to pack to");
  if (a.adam_beta1 < 0 || a.adam_beta1 >= 1 || a.adam_beta2 < 0 || a.adam_beta2 >= 1) {
    fail_usage(kComponent, "--adam_beta1 and --adam_beta2 must be in [0, 1)");
  }
  if (a.eval_split_ratio < 0 || a.eval_split_ratio >= 1)
    fail_usage(kComponent, "--eval_split_ratio must be in [0, 1)");
  for (const std::string& r : a.report_to) {
    if (r == "trackio")
      fail_usage(kComponent,
                 "--report_to trackio: sft.cpp does not write trackio's database (hint: use "
                 "--report_to wandb for an offline W&B run, tensorboard, or all for both)");
    require_one_of("report_to", r, {"none", "all", "tensorboard", "wandb"});
  }
  for (const std::string& c : a.dataset_columns) {
    if (c.find('=') == std::string::npos) {
      fail_usage(kComponent,
                 "--dataset_columns entry '" + c + "' is not target=source (e.g. prompt=question)");
    }
  }
  try {
    parse_size_bytes(a.max_shard_size);
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
    fail_usage(kComponent, message_of(e));
  }
  require_one_of("log_level", a.log_level,
                 {"passive", "debug", "info", "warning", "error", "critical"});
  try {
    parse_schedule_type(a.lr_scheduler_type);
  } catch (const Error& e) {
    fail_usage(kComponent, "--lr_scheduler_type: " + message_of(e));
  }
  validate_trl_extras(a, given);
  // A --datasets mixture has no test split (TRL's get_dataset makes one only with
  // test_split_size): say so now rather than after preparing the data.
  if (mixture && a.eval_strategy != "no" && a.eval_split_ratio == 0)
    fail_usage(kComponent, "--eval_strategy " + a.eval_strategy +
                               ": a --datasets mixture has no test split (hint: --test_split_size "
                               "0.1 holds out a share of its rows, or --eval_strategy no)");
  if (a.hub_strategy == "checkpoint" || a.hub_strategy == "all_checkpoints")
    fail_usage(kComponent,
               "--hub_strategy " + a.hub_strategy +
                   " (pushing checkpoint folders) is not supported yet (hint: use every_save, "
                   "which pushes each checkpoint's model files, or end)");
  require_one_of("hub_strategy", a.hub_strategy, {"end", "every_save"});
  validate_distributed_args(a);
  validate_lora_args(a);
  validate_quant_args(a.quant, a.use_peft || is_adapter_dir(a.model_name_or_path), a.notices);
}

void validate_distributed_args(TrainingArgs& a) {
  resolve_sharding_args(a);
  if (a.ddp_timeout < 0) fail_usage(kComponent, "--ddp_timeout must be >= 0 seconds (0: no limit)");
  if (a.nproc_per_node && *a.nproc_per_node < 1)
    fail_usage(kComponent, "--nproc_per_node must be at least 1");
  if (a.tp_size == 1)
    if (const char* env = std::getenv("TP_SIZE"); env && *env) a.tp_size = std::atoll(env);
  if (a.tp_size < 1) fail_usage(kComponent, "--tp_size must be at least 1");
  validate_expert_parallel_args(a);
  if (a.tp_size > 1 && a.use_peft)
    fail_usage(kComponent, "--tp_size " + std::to_string(a.tp_size) +
                               " with --use_peft: LoRA adapters are not split over "
                               "tensor-parallel ranks (hint: --tp_size 1; mpirun -np N then "
                               "trains the adapters data parallel)");
}

// ---- LoRA (TRL ModelConfig) ----
void validate_lora_args(const TrainingArgs& a) {
  if (a.use_dora)
    fail_usage(
        kComponent,
        "--use_dora true: DoRA (weight-decomposed LoRA) is not implemented in sft.cpp (hint: "
        "drop --use_dora for plain LoRA, which --use_peft trains)");
  if (!a.use_peft) return;
  if (a.lora_r <= 0)
    fail_usage(kComponent, "--lora_r must be a positive rank, got " + std::to_string(a.lora_r) +
                               " (hint: TRL's default is 16)");
  if (a.lora_dropout < 0 || a.lora_dropout >= 1)
    fail_usage(kComponent, "--lora_dropout must be in [0, 1), got " + number_text(a.lora_dropout));
  require_one_of("lora_task_type", a.lora_task_type, {"CAUSAL_LM"});
  // The split projections and Phi-3's fused ones (which a model has, resolve_lora_targets
  // checks once the config is known).
  static const std::vector<std::string> kProjections = {"q_proj",    "k_proj",    "v_proj",
                                                        "o_proj",    "gate_proj", "up_proj",
                                                        "down_proj", "qkv_proj",  "gate_up_proj"};
  const auto& t = a.lora_target_modules;
  if (t.size() == 1 && (t[0] == "all-linear" || t[0] == "all_linear")) return;
  for (const std::string& m : t) {
    const std::string leaf = m.substr(m.rfind('.') == std::string::npos ? 0 : m.rfind('.') + 1);
    if (std::find(kProjections.begin(), kProjections.end(), leaf) == kProjections.end())
      fail_usage(kComponent,
                 "--lora_target_modules: '" + m +
                     "' is not a projection sft can adapt (hint: q_proj, k_proj, v_proj, o_proj, "
                     "gate_proj, up_proj, down_proj, Phi-3's qkv_proj and gate_up_proj, or "
                     "all-linear; the LM head is never adapted)");
  }
}

uint64_t parse_size_bytes(const std::string& text) {
  size_t digits = 0;
  while (digits < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.')) {
    ++digits;
  }
  std::string unit = text.substr(digits);
  std::transform(unit.begin(), unit.end(), unit.begin(),
                 [](unsigned char c) { return std::toupper(c); });
  const struct {
    const char* name;
    double bytes;
  } kUnits[] = {{"", 1},
                {"B", 1},
                {"KB", 1e3},
                {"MB", 1e6},
                {"GB", 1e9},
                {"TB", 1e12},
                {"KIB", 1024.0},
                {"MIB", 1048576.0},
                {"GIB", 1073741824.0},
                {"TIB", 1099511627776.0}};
  if (digits > 0) {
    for (const auto& u : kUnits) {
      if (unit == u.name) return static_cast<uint64_t>(std::stod(text.substr(0, digits)) * u.bytes);
    }
  }
  fail(kComponent,
       "size '" + text + "' is not a number with an optional unit (e.g. 5GB, 500MB, 2GiB)");
}

}  // namespace sft
