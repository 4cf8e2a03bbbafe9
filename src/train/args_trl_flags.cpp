// The table of TRL's fields (see args_trl_flags.h). Sorted by name, one entry per field of
// tests/fixtures/trl/trl_sft_flags.txt. Implemented entries carry no message: their help is in
// train/args.cpp.
#include "train/args_trl_flags.h"

#include <algorithm>

namespace sft {

namespace {

using K = TrlFlagKind;
using T = OptionType;

constexpr std::string_view kNoLoader =
    "has no effect in sft.cpp: the rows are prepared up front and batched in memory, without "
    "loader workers";
constexpr std::string_view kDdpReduce =
    "has no effect in sft.cpp: gradients are summed over MPI once per optimizer step, in 16 MiB "
    "buckets, for every trainable parameter";
constexpr std::string_view kNoTorch = "has no effect in sft.cpp: it runs no PyTorch";
constexpr std::string_view kOneProcess =
    "has no effect in sft.cpp: a run is one process per rank, each writing only what rank 0 "
    "writes";

constexpr TrlFlag kFlags[] = {
    {"accelerator_config", K::kNotice, T::kJson, "None",
     "has no effect in sft.cpp: it uses no Accelerate"},
    {"activation_checkpointing", K::kNotice, T::kBool, "None",
     "has no effect in sft.cpp (an FSDP option): use --gradient_checkpointing"},
    {"activation_checkpointing_kwargs", K::kNotice, T::kJson, "None",
     "has no effect in sft.cpp (an FSDP option)"},
    {"activation_offloading", K::kNotice, T::kBool, "false",
     "has no effect in sft.cpp: activations already live in CPU memory"},
    {"adam_beta1", K::kImplemented, T::kFloat, "", ""},
    {"adam_beta2", K::kImplemented, T::kFloat, "", ""},
    {"adam_epsilon", K::kImplemented, T::kFloat, "", ""},
    {"assistant_only_loss", K::kImplemented, T::kBool, "", ""},
    {"attn_implementation", K::kImplemented, T::kString, "", ""},
    {"auto_find_batch_size", K::kNotice, T::kBool, "false",
     "has no effect in sft.cpp: the batch size is used as given (no retry on out-of-memory)"},
    {"average_tokens_across_devices", K::kNotice, T::kBool, "true",
     "has no effect in sft.cpp: the loss is always averaged over the target tokens of all ranks"},
    {"batch_eval_metrics", K::kNotice, T::kBool, "false",
     "has no effect in sft.cpp: evaluation computes the loss and token accuracy only"},
    {"bf16", K::kImplemented, T::kBool, "", ""},
    {"bf16_full_eval", K::kNotice, T::kBool, "false",
     "has no effect in sft.cpp: evaluation uses the training precision (--bf16)"},
    {"bnb_4bit_quant_storage", K::kImplemented, T::kString, "", ""},
    {"bnb_4bit_quant_type", K::kImplemented, T::kString, "", ""},
    {"chat_template_path", K::kImplemented, T::kString, "", ""},
    {"completion_only_loss", K::kImplemented, T::kBool, "", ""},
    {"data_seed", K::kImplemented, T::kInt, "", ""},
    {"dataloader_drop_last", K::kRefused, T::kBool, "false",
     "dropping the last incomplete batch is not supported yet"},
    {"dataloader_in_order", K::kNotice, T::kBool, "true", kNoLoader},
    {"dataloader_multiprocessing_context", K::kNotice, T::kString, "None", kNoLoader},
    {"dataloader_num_workers", K::kNotice, T::kInt, "0", kNoLoader},
    {"dataloader_persistent_workers", K::kNotice, T::kBool, "false", kNoLoader},
    {"dataloader_pin_memory", K::kNotice, T::kBool, "true", kNoLoader},
    {"dataloader_prefetch_factor", K::kNotice, T::kInt, "None", kNoLoader},
    {"dataset_config", K::kImplemented, T::kString, "", ""},
    {"dataset_kwargs", K::kRefused, T::kJson, "None",
     "extra dataset arguments (such as skip_prepare_dataset) are not supported yet"},
    {"dataset_name", K::kImplemented, T::kString, "", ""},
    {"dataset_num_proc", K::kImplemented, T::kInt, "", ""},
    {"dataset_streaming", K::kImplemented, T::kBool, "", ""},
    {"dataset_test_split", K::kImplemented, T::kString, "", ""},
    {"dataset_text_field", K::kImplemented, T::kString, "", ""},
    {"dataset_train_split", K::kImplemented, T::kString, "", ""},
    {"datasets", K::kImplemented, T::kJson, "", ""},
    {"ddp_backend", K::kNotice, T::kString, "None",
     "has no effect in sft.cpp: the communicator is OpenMPI's (mpirun -np N)"},
    {"ddp_broadcast_buffers", K::kNotice, T::kBool, "None", kDdpReduce},
    {"ddp_bucket_cap_mb", K::kNotice, T::kInt, "None", kDdpReduce},
    {"ddp_find_unused_parameters", K::kNotice, T::kBool, "None", kDdpReduce},
    {"ddp_static_graph", K::kNotice, T::kBool, "None", kDdpReduce},
    {"ddp_timeout", K::kImplemented, T::kInt, "", ""},
    {"debug", K::kNotice, T::kString, "", "has no effect in sft.cpp (PyTorch/XLA debug options)"},
    {"deepspeed", K::kImplemented, T::kString, "", ""},
    {"disable_tqdm", K::kImplemented, T::kBool, "", ""},
    {"do_eval", K::kNotice, T::kBool, "false",
     "has no effect in sft.cpp (nor in `trl sft`): evaluation follows --eval_strategy"},
    {"do_predict", K::kNotice, T::kBool, "false",
     "has no effect in sft.cpp (nor in `trl sft`): there is no prediction step"},
    {"do_train", K::kNotice, T::kBool, "false",
     "has no effect in sft.cpp (nor in `trl sft`): `sft train` always trains"},
    {"dtype", K::kImplemented, T::kString, "", ""},
    {"enable_jit_checkpoint", K::kNotice, T::kBool, "false",
     "has no effect in sft.cpp: SIGINT/SIGTERM always end the step, save and print the resume "
     "command"},
    {"eos_token", K::kImplemented, T::kString, "", ""},
    {"eval_accumulation_steps", K::kNotice, T::kInt, "None",
     "has no effect in sft.cpp: evaluation keeps only running sums"},
    {"eval_delay", K::kRefused, T::kFloat, "0",
     "delaying the first evaluation is not supported yet"},
    {"eval_do_concat_batches", K::kNotice, T::kBool, "true",
     "has no effect in sft.cpp: evaluation keeps no predictions"},
    {"eval_on_start", K::kImplemented, T::kBool, "", ""},
    {"eval_packing", K::kImplemented, T::kBool, "", ""},
    {"eval_steps", K::kImplemented, T::kFloat, "", ""},
    {"eval_strategy", K::kImplemented, T::kString, "", ""},
    {"eval_use_gather_object", K::kNotice, T::kBool, "false",
     "has no effect in sft.cpp: evaluation keeps no predictions"},
    {"fp16", K::kImplemented, T::kBool, "", ""},
    {"fp16_full_eval", K::kNotice, T::kBool, "false",
     "has no effect in sft.cpp: evaluation uses the training precision"},
    {"fsdp", K::kImplemented, T::kString, "", ""},
    {"fsdp_config", K::kImplemented, T::kJson, "", ""},
    {"full_determinism", K::kNotice, T::kBool, "false",
     "has no effect in sft.cpp: runs are always bit-identical for the same inputs and thread "
     "count"},
    {"gradient_accumulation_steps", K::kImplemented, T::kInt, "", ""},
    {"gradient_checkpointing", K::kImplemented, T::kBool, "", ""},
    {"gradient_checkpointing_kwargs", K::kImplemented, T::kJson, "", ""},
    {"greater_is_better", K::kNotice, T::kBool, "None",
     "has no effect in sft.cpp: it is used with --load_best_model_at_end, which is not supported "
     "yet"},
    {"hub_always_push", K::kNotice, T::kBool, "false",
     "has no effect in sft.cpp: every push runs to completion before training goes on"},
    {"hub_model_id", K::kImplemented, T::kString, "", ""},
    {"hub_private_repo", K::kImplemented, T::kBool, "", ""},
    {"hub_revision", K::kRefused, T::kString, "None",
     "pushing to a branch other than main is not supported yet"},
    {"hub_strategy", K::kImplemented, T::kString, "", ""},
    {"hub_token", K::kImplemented, T::kString, "", ""},
    {"ignore_bias_buffers", K::kNotice, T::kBool, "false",
     "has no effect in sft.cpp: the supported models have no boolean buffers"},
    {"ignore_data_skip", K::kRefused, T::kBool, "false",
     "resuming always continues at the exact batch where the checkpoint was taken"},
    {"include_for_metrics", K::kNotice, T::kStringList, "",
     "has no effect in sft.cpp: evaluation computes the loss and token accuracy only"},
    {"include_num_input_tokens_seen", K::kNotice, T::kString, "no",
     "has no effect in sft.cpp: trainer_state.json always counts num_input_tokens_seen"},
    {"label_names", K::kNotice, T::kStringList, "None",
     "has no effect in sft.cpp: the labels are always the prepared rows' labels"},
    {"label_smoothing_factor", K::kRefused, T::kFloat, "0", "label smoothing is not supported yet"},
    {"learning_rate", K::kImplemented, T::kFloat, "", ""},
    {"length_column_name", K::kNotice, T::kString, "length",
     "has no effect in sft.cpp: there is no group_by_length sampler"},
    {"liger_kernel_config", K::kNotice, T::kJson, "None",
     "has no effect in sft.cpp: it has its own fused CPU kernels"},
    {"load_best_model_at_end", K::kRefused, T::kBool, "false",
     "loading the best checkpoint at the end is not supported yet (hint: the checkpoints and "
     "their eval_loss in trainer_state.json are kept; pick one with --save_total_limit None)"},
    {"load_in_4bit", K::kImplemented, T::kBool, "", ""},
    {"load_in_8bit", K::kImplemented, T::kBool, "", ""},  // refused in train/quant_args.cpp
    {"local_rank", K::kNotice, T::kInt, "-1",
     "has no effect in sft.cpp: the rank comes from the MPI environment"},
    {"log_level", K::kImplemented, T::kString, "", ""},
    {"log_level_replica", K::kNotice, T::kString, "warning", kOneProcess},
    {"log_on_each_node", K::kNotice, T::kBool, "true", kOneProcess},
    {"logging_first_step", K::kImplemented, T::kBool, "", ""},
    {"logging_nan_inf_filter", K::kNotice, T::kBool, "true",
     "has no effect in sft.cpp: a non-finite loss is logged as it is (see --skip_nonfinite_steps)"},
    {"logging_steps", K::kImplemented, T::kFloat, "", ""},
    {"logging_strategy", K::kImplemented, T::kString, "", ""},
    {"lora_alpha", K::kImplemented, T::kInt, "", ""},
    {"lora_dropout", K::kImplemented, T::kFloat, "", ""},
    {"lora_modules_to_save", K::kImplemented, T::kStringList, "", ""},
    {"lora_r", K::kImplemented, T::kInt, "", ""},
    {"lora_target_modules", K::kImplemented, T::kStringList, "", ""},
    {"lora_target_parameters", K::kImplemented, T::kStringList, "", ""},
    {"lora_task_type", K::kImplemented, T::kString, "", ""},
    {"loss_type", K::kImplemented, T::kString, "", ""},
    {"lr_scheduler_kwargs", K::kImplemented, T::kJson, "", ""},
    {"lr_scheduler_type", K::kImplemented, T::kString, "", ""},
    {"max_grad_norm", K::kImplemented, T::kFloat, "", ""},
    {"max_length", K::kImplemented, T::kInt, "", ""},
    {"max_steps", K::kImplemented, T::kInt, "", ""},
    {"metric_for_best_model", K::kNotice, T::kString, "None",
     "has no effect in sft.cpp: it is used with --load_best_model_at_end, which is not supported "
     "yet"},
    {"model_init_kwargs", K::kImplemented, T::kJson, "", ""},
    {"model_name_or_path", K::kImplemented, T::kString, "", ""},
    {"model_revision", K::kImplemented, T::kString, "", ""},
    {"neftune_noise_alpha", K::kImplemented, T::kFloat, "", ""},
    {"num_train_epochs", K::kImplemented, T::kFloat, "", ""},
    {"optim", K::kImplemented, T::kString, "", ""},
    {"optim_args", K::kRefused, T::kString, "None",
     "optimizer arguments are not supported (sft.cpp has AdamW only; use --adam_beta1, "
     "--adam_beta2, --adam_epsilon, --weight_decay)"},
    {"optim_target_modules", K::kRefused, T::kStringList, "None",
     "GaLore/APOLLO target modules are not supported (sft.cpp has AdamW only)"},
    {"output_dir", K::kImplemented, T::kString, "", ""},
    {"packing", K::kImplemented, T::kBool, "", ""},
    {"packing_strategy", K::kImplemented, T::kString, "", ""},
    {"pad_to_multiple_of", K::kImplemented, T::kInt, "", ""},
    {"pad_token", K::kImplemented, T::kString, "", ""},
    {"padding_free", K::kImplemented, T::kBool, "", ""},
    {"parallelism_config", K::kRefused, T::kJson, "None",
     "Accelerate parallelism configs are not supported (sft.cpp runs data-parallel under mpirun)"},
    {"per_device_eval_batch_size", K::kImplemented, T::kInt, "", ""},
    {"per_device_train_batch_size", K::kImplemented, T::kInt, "", ""},
    {"prediction_loss_only", K::kNotice, T::kBool, "false",
     "has no effect in sft.cpp: evaluation computes the loss and token accuracy only"},
    {"project", K::kNotice, T::kString, "huggingface",
     "has no effect in sft.cpp: it names the trackio project, and trackio is not supported"},
    {"push_to_hub", K::kImplemented, T::kBool, "", ""},
    {"remove_unused_columns", K::kNotice, T::kBool, "true",
     "has no effect in sft.cpp: only the columns the data format needs are read"},
    {"report_to", K::kImplemented, T::kStringList, "", ""},
    {"restore_callback_states_from_checkpoint", K::kNotice, T::kBool, "false",
     "has no effect in sft.cpp: it has no callbacks"},
    {"resume_from_checkpoint", K::kImplemented, T::kString, "", ""},
    {"router_aux_loss_coef", K::kImplemented, T::kFloat, "", ""},
    {"run_name", K::kImplemented, T::kString, "", ""},
    {"save_on_each_node", K::kNotice, T::kBool, "false", kOneProcess},
    {"save_only_model", K::kImplemented, T::kBool, "", ""},
    {"save_steps", K::kImplemented, T::kFloat, "", ""},
    {"save_strategy", K::kImplemented, T::kString, "", ""},
    {"save_total_limit", K::kImplemented, T::kInt, "", ""},
    {"seed", K::kImplemented, T::kInt, "", ""},
    {"shuffle_dataset", K::kImplemented, T::kBool, "", ""},
    {"skip_memory_metrics", K::kNotice, T::kBool, "true",
     "has no effect in sft.cpp: it reports no per-stage memory metrics"},
    {"streaming", K::kNotice, T::kBool, "false",
     "has no effect in sft.cpp: a dataset mixture is prepared once, like --dataset_streaming"},
    {"test_split_size", K::kImplemented, T::kFloat, "", ""},
    {"tf32", K::kNotice, T::kBool, "None", "has no effect in sft.cpp: TF32 is a GPU format"},
    {"torch_compile", K::kNotice, T::kBool, "false",
     "has no effect in sft.cpp: its kernels are compiled ahead of time"},
    {"torch_compile_backend", K::kNotice, T::kString, "None", kNoTorch},
    {"torch_compile_mode", K::kNotice, T::kString, "None", kNoTorch},
    {"torch_empty_cache_steps", K::kNotice, T::kInt, "None", kNoTorch},
    {"trackio_bucket_id", K::kNotice, T::kString, "None",
     "has no effect in sft.cpp: trackio is not supported"},
    {"trackio_space_id", K::kNotice, T::kString, "None",
     "has no effect in sft.cpp: trackio is not supported"},
    {"trackio_static_space_id", K::kNotice, T::kString, "None",
     "has no effect in sft.cpp: trackio is not supported"},
    {"train_sampling_strategy", K::kImplemented, T::kString, "", ""},
    {"truncation_mode", K::kImplemented, T::kString, "", ""},
    {"trust_remote_code", K::kNotice, T::kBool, "false",
     "has no effect in sft.cpp: it runs no model code from the Hub (the architectures are built "
     "in)"},
    {"use_bnb_nested_quant", K::kImplemented, T::kBool, "", ""},
    {"use_cache", K::kNotice, T::kBool, "false",
     "has no effect in sft.cpp: training keeps no KV cache"},
    {"use_cpu", K::kImplemented, T::kBool, "", ""},
    {"use_dora", K::kImplemented, T::kBool, "", ""},
    {"use_liger_kernel", K::kNotice, T::kBool, "false",
     "has no effect in sft.cpp: it has its own fused CPU kernels"},
    {"use_peft", K::kImplemented, T::kBool, "", ""},
    {"use_rslora", K::kImplemented, T::kBool, "", ""},
    {"warmup_steps", K::kImplemented, T::kFloat, "", ""},
    {"weight_decay", K::kImplemented, T::kFloat, "", ""},
};

}  // namespace

std::span<const TrlFlag> trl_flags() {
  return kFlags;
}

const TrlFlag* find_trl_flag(std::string_view name) {
  for (const TrlFlag& f : kFlags) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

void add_trl_compat_options(OptionSet& options, std::map<std::string, std::string>* store) {
  for (const TrlFlag& f : kFlags) {
    if (f.kind == TrlFlagKind::kImplemented) continue;
    const bool notice = f.kind == TrlFlagKind::kNotice;
    options.add_text(std::string(f.name), f.type, store,
                     notice ? "TRL flags without effect in sft.cpp" : "TRL flags not supported yet",
                     notice ? "accepted" : "refused unless TRL's default",
                     std::string(f.trl_default));
  }
}

void check_trl_compat_values(const std::map<std::string, std::string>& store,
                             std::vector<std::string>& notices) {
  for (const auto& [name, value] : store) {
    const TrlFlag* f = find_trl_flag(name);
    if (f == nullptr || value == f->trl_default) continue;
    if (f->kind == TrlFlagKind::kRefused) {
      fail_usage("args", "--" + name + " " + value + ": " + std::string(f->message));
    }
    if (f->kind == TrlFlagKind::kNotice)
      notices.push_back("--" + name + " " + std::string(f->message));
  }
}

}  // namespace sft
