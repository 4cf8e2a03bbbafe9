// The step loop; checkpoints and resume are in trainer_checkpoint.cpp, evaluation and the
// end-of-run outputs in trainer_eval.cpp.
#include "train/trainer.h"

#include <cmath>
#include <cstdlib>
#include <ctime>
#include <string>

#include "core/clock.h"
#include "core/error.h"
#include "core/log.h"
#include "optim/clip.h"
#include "parallel/groups.h"
#include "train/checkpoint_dir.h"
#include "train/device_step.h"
#include "train/moe_args.h"
#include "train/stop_signal.h"
#include "train/tensorboard_args.h"
#include "train/tensorboard_writer.h"
#include "train/wandb_config.h"

namespace sft {

Trainer::Trainer(const TrainerSetup& s)
    : args_(*s.args),
      model_(*s.model),
      train_(*s.train),
      eval_(s.eval),
      comm_(s.comm),
      tp_comm_(s.tp_comm),
      setup_(s),
      test_faults_(TestFaults::from_environment(world_rank())),
      aux_coef_(router_aux_loss_coef(args_, model_.config())) {
  init_loader_and_plan();
  init_model_and_optimizer();
  init_state();
  if (is_main()) init_log();
}

void Trainer::init_loader_and_plan() {
  data::LoaderOptions lo;
  lo.seed = static_cast<uint64_t>(args_.data_seed.value_or(args_.seed));
  lo.shuffle = setup_.shuffle;
  lo.batch_size = static_cast<uint32_t>(args_.per_device_train_batch_size);
  lo.rank = static_cast<uint32_t>(comm_->rank());
  lo.world_size = static_cast<uint32_t>(comm_->size());
  loader_ = std::make_unique<data::Loader>(train_.num_rows(), lo);

  plan_input_.micro_batches_per_epoch = static_cast<int64_t>(loader_->steps_per_epoch());
  plan_input_.gradient_accumulation_steps = args_.gradient_accumulation_steps;
  plan_input_.max_steps = args_.max_steps;
  plan_input_.num_train_epochs = args_.num_train_epochs;
  plan_input_.logging_steps = args_.logging_steps;
  plan_input_.save_steps = args_.save_steps;
  plan_input_.eval_steps = args_.eval_steps;
  plan_ = plan_steps(plan_input_);
}

void Trainer::init_model_and_optimizer() {
  check_device_training(args_, model_, *comm_, tp_comm_);
  init_device_comms();
  model_.zero_grad();
  model_.set_gradient_checkpointing(args_.gradient_checkpointing);
  model_.set_checkpoint_keeps_mlp(args_.gradient_checkpointing_keep_mlp);
  // HF's get_decay_parameter_names: no weight decay for biases and norm weights.
  slices_ = model_.trainable().decay_slices();
  if (setup_.ep_comm) {  // the other ranks' experts are never stepped here
    experts_ = std::make_unique<ExpertShards>(model_.trainable(), model_.config().num_experts,
                                              *comm_, *setup_.ep_comm, *setup_.expert_dp_comm);
    slices_ = experts_->own_slices(slices_);
  }
  // FLOPs and HF's total_flos count the whole model (not a tensor-parallel slice).
  const ParamCounts counts = count_parameters(parameter_layout(model_.config()));
  matmul_params_ = matmul_params_per_token(model_.config(), counts);
  // HF: num_parameters(exclude_embeddings=True), every expert included.
  flos_params_ = counts.total - counts.embeddings;

  AdamWOptions ao;
  ao.beta1 = args_.adam_beta1;
  ao.beta2 = args_.adam_beta2;
  ao.eps = args_.adam_epsilon;
  ao.weight_decay = args_.weight_decay;
  // Only what trains has moments: with LoRA, the adapters (the frozen base has none).
  const size_t n_params = static_cast<size_t>(model_.trainable().numel());
  if (args_.zero_stage >= 1)
    zero1_ = std::make_unique<Zero1>(n_params, ao, *comm_, model_.trainable().device(),
                                     dp_device_.get());
  else
    optimizer_ = std::make_unique<AdamW>(n_params, ao, model_.trainable().device());
  // Stage 2: the gradients too; stage 3: and the layers' parameters (trainer_parallel.cpp).
  if (args_.zero_stage >= 2) init_zero23();
  if (!model_.trainable().holds_all() && args_.zero_stage != 3)
    fail("train", "the model was loaded as a ZeRO-3 shard, but --zero_stage is " +
                      std::to_string(args_.zero_stage));
  const int64_t warmup =
      resolve_warmup_steps(args_.warmup_steps, args_.warmup_ratio, plan_.max_steps);
  const Json kwargs =
      args_.lr_scheduler_kwargs.is_null() ? Json::object() : args_.lr_scheduler_kwargs;
  schedule_ = make_schedule_config(parse_schedule_type(args_.lr_scheduler_type), warmup,
                                   plan_.max_steps, args_.learning_rate, kwargs);
}

void Trainer::init_state() {
  state_.max_steps = plan_.max_steps;
  state_.logging_steps = plan_.logging_steps;
  state_.eval_steps = plan_.eval_steps;
  state_.save_steps = plan_.save_steps;
  state_.num_train_epochs = plan_.num_epochs;
  state_.train_batch_size = args_.per_device_train_batch_size;
}

void Trainer::init_log() {
  MetricsLogOptions mo;
  mo.output_dir = args_.output_dir;
  for (const std::string& r : args_.report_to)
    if (r == "tensorboard" || r == "all") {
      // transformers 5: $TENSORBOARD_LOGGING_DIR, else output_dir/runs/<date>_<host> (a folder
      // per run); --logging_dir, which it no longer has, still wins when given.
      const char* env = std::getenv("TENSORBOARD_LOGGING_DIR");
      mo.tensorboard_dir = args_.logging_dir ? *args_.logging_dir
                           : env && *env     ? std::string(env)
                                             : default_tensorboard_dir(args_.output_dir,
                                                                       std::time(nullptr), host_name());
      mo.tensorboard_texts = {
          {"args", training_args_json(args_).dump(2)},
          {"model_config",
           model_config_text(setup_.export_options.source_model_dir, model_.config())}};
    }
  // --report_to wandb / all: a W&B offline run (WANDB_MODE=disabled: none).
  for (const std::string& r : args_.report_to)
    if ((r == "wandb" || r == "all") && !mo.wandb) {
      WandbSettings ws = wandb_settings_from_env(args_.run_name);
      if (ws.mode == "disabled") {
        log_info("[wandb] WANDB_MODE=disabled: no W&B run is written");
        break;
      }
      const Json model_config =
          wandb_model_config(setup_.export_options.source_model_dir, model_.config());
      mo.wandb = WandbStart{ws, wandb_run_config(model_config, args_), model_.num_parameters()};
    }
  mo.progress_bar = setup_.console_progress && !args_.disable_tqdm.value_or(false);
  mo.max_steps = plan_.max_steps;
  log_ = std::make_unique<MetricsLog>(mo);
}

Trainer::~Trainer() {
  model_.set_layer_hooks({});  // they call into this trainer
  if (tp_device_)              // the model's group outlives this trainer's NCCL communicator
    if (auto* g = dynamic_cast<CommShardGroup*>(model_.tensor_parallel().group))
      g->attach_device(nullptr);
}

// NEFTune as transformers' hook: alpha / sqrt(L * hidden), L the length the embedding output
// has there — the padded row length, or every token for padding-free (one row) batches. The
// noise stream is (step, micro-batch), so a resumed run draws the same noise.
void Trainer::arm_neftune(const MicroBatch& mb, size_t index) {
  const int64_t T = static_cast<int64_t>(mb.batch.tokens.size());
  const int64_t rows = setup_.batching.padding_free ? 1 : std::max<int64_t>(1, mb.rows);
  const double dims = static_cast<double>(T / rows) * model_.config().hidden_size;
  const uint64_t stream = (static_cast<uint64_t>(state_.global_step) << 16) | index;
  model_.arm_embedding_noise(*args_.neftune_noise_alpha / std::sqrt(dims),
                             static_cast<uint64_t>(args_.seed) ^ 0x4e4546544e45ull, stream);
}

std::vector<uint64_t> Trainer::next_rows() {
  const data::LoaderCursor before = loader_->cursor();
  std::vector<uint64_t> rows = loader_->next_batch();
  // One process: the last batch of an epoch is short, as torch's DataLoader makes it (the
  // loader completes it from the epoch's start only to keep several ranks in step).
  if (comm_->size() == 1) {
    const uint64_t left = train_.num_rows() - before.position;
    if (left < rows.size()) rows.resize(left);
  }
  return rows;
}

double Trainer::step_flops(const model::Batch& b) const {
  const ModelConfig& c = model_.config();
  double attention = 0;
  auto doc = [&](double n) { attention += n * (n + 1) / 2; };
  if (b.doc_lengths.empty()) doc(static_cast<double>(b.tokens.size()));
  for (int64_t d : b.doc_lengths) doc(static_cast<double>(d));
  // QKᵀ and PV: 2 matmuls × 2 FLOPs × H·D per (query, key) pair; training = 3 × forward.
  const double attn = 3.0 * 4.0 * double(c.num_attention_heads * c.head_dim) * attention *
                      double(c.num_hidden_layers);
  return 6.0 * matmul_params_ * double(b.tokens.size()) + attn;
}

// A step in phases: this rank's micro-batches; N, the step's targets on every rank; the
// forward and backward passes; the sums over the ranks; the logged statistics.
Trainer::StepStats Trainer::run_step(int64_t count) {
  const std::vector<MicroBatch> mbs = next_micro_batches(count);
  const double n_global = count_targets(mbs);
  StepStats st;
  StepCounts counts = run_micro_batches(mbs, n_global, st.flops);
  reduce_step(counts);
  st.tokens = static_cast<int64_t>(counts.tokens);
  st.padded_tokens = static_cast<int64_t>(counts.padded_tokens);
  st.loss = n_global > 0 ? counts.loss_sum / n_global : 0.0;
  // TRL adds router_aux_loss_coef · aux / accumulation steps per micro-batch (DDP then averages
  // over the ranks), and logs the unweighted aux_loss averaged over micro-batches and ranks.
  // (TRL's aux_loss_enabled: experts and a non-zero coefficient, train/moe_args.h.)
  if (aux_coef_ != 0) {
    const double batches = static_cast<double>(count * comm_->size());
    st.aux_loss = counts.aux_loss_sum / batches;
    st.loss += aux_coef_ * *st.aux_loss;
  }
  for (const MicroBatchCounts& m : counts.micro_batches) {
    st.accuracy.push_back(m.targets > 0 ? m.correct / m.targets : 0.0);
    st.entropy.push_back(m.targets > 0 ? m.entropy_sum / m.targets : 0.0);
  }
  return st;
}

std::vector<MicroBatch> Trainer::next_micro_batches(int64_t count) {
  std::vector<MicroBatch> mbs;
  for (int64_t i = 0; i < count; ++i) {
    const std::vector<uint64_t> rows = next_rows();
    mbs.push_back(make_micro_batch(train_, rows, setup_.batching));
  }
  return mbs;
}

// HF's num_items_in_batch: known before the first forward, so each backward is scaled by it.
double Trainer::count_targets(const std::vector<MicroBatch>& mbs) {
  std::vector<int64_t> n = {0};
  for (const MicroBatch& mb : mbs) n[0] += mb.targets;
  comm_->all_reduce_sum(std::span<int64_t>(n));
  return static_cast<double>(n[0]);
}

StepCounts Trainer::run_micro_batches(const std::vector<MicroBatch>& mbs, double n_global,
                                      double& flops) {
  const size_t count = mbs.size();
  StepCounts counts;
  counts.micro_batches.resize(count);
  // The load-balancing loss's weight in the summed gradients (ranks' gradients are summed,
  // TRL's DDP averages them): router_aux_loss_coef / (accumulation steps · ranks).
  if (aux_coef_ != 0)
    model_.set_router_aux_loss_weight(aux_coef_ / static_cast<double>(count * comm_->size()));
  for (size_t i = 0; i < count; ++i) {
    // The loss scale is known before the forward, so the LM head's gradient comes with it.
    const double scale = n_global > 0 ? 1.0 / n_global : 0.0;
    // LoRA dropout masks: a function of (step, rank, micro-batch), so a resume redraws them.
    model_.set_lora_dropout_key(
        (static_cast<uint64_t>(state_.global_step) * static_cast<uint64_t>(comm_->size()) +
         static_cast<uint64_t>(comm_->rank())) *
            static_cast<uint64_t>(count) +
        i);
    if (args_.neftune_noise_alpha && *args_.neftune_noise_alpha > 0) arm_neftune(mbs[i], i);
    const model::LossStats ls =
        n_global > 0 ? model_.forward(mbs[i].batch, nullptr, scale) : model_.forward(mbs[i].batch);
    if (n_global > 0) {
      // The last backward of the step starts each layer's gradient all-reduce as it completes.
      overlap_armed_ = !overlap_layers_.empty() && i + 1 == count;
      model_.backward(scale);
      overlap_armed_ = false;
    }
    if (zero2_ && n_global > 0) zero2_->finish_micro_batch(model_.trainable().grads());
    if (!reported_activations_ && log_) {
      reported_activations_ = true;
      log_->message(
          "[train] saved activations: " + std::to_string(model_.activation_bytes() >> 20) +
          " MiB for a micro-batch of " + std::to_string(mbs[i].batch.tokens.size()) + " tokens (" +
          (model_.compute_dtype() == DType::kBF16 ? "bf16" : "fp32") + " compute)");
    }
    if (log_) log_->micro_batch_done(static_cast<int64_t>(i + 1), static_cast<int64_t>(count));
    counts.micro_batches[i] = {static_cast<double>(ls.count), static_cast<double>(ls.correct),
                               ls.entropy_sum};
    counts.loss_sum += ls.loss_sum;
    counts.aux_loss_sum += model_.router_aux_loss();
    counts.tokens += static_cast<double>(mbs[i].real_tokens);
    counts.padded_tokens += static_cast<double>(mbs[i].batch.tokens.size());
    flops += step_flops(mbs[i].batch);
  }
  return counts;
}

// The counts summed over the data-parallel ranks (one all-reduce), then the gradients: the
// tensor-parallel partial ones over the group, and (without ZeRO, which reduce-scatters in
// apply_update, or after each micro-batch under stage 2) all of them over the data-parallel
// ranks, once per optimizer step.
void Trainer::reduce_step(StepCounts& counts) {
  const int64_t step = state_.global_step + 1;
  test_faults_.after_micro_batches(step, counts.loss_sum);
  if (comm_->size() > 1) all_reduce_sum(*comm_, counts);
  test_faults_.before_gradient_reduction(step);
  if (tp_comm_) sum_partial_grads_over_tp();
  if (experts_)
    experts_->reduce_gradients(model_.trainable().grads());
  else if (comm_->size() > 1 && !zero1_)
    all_reduce_gradients();
}

void Trainer::apply_update(StepStats& st) {
  const int64_t step = state_.global_step + 1;
  // One process on a device: the norm there; with ranks, reduce_grad_norm sums over them.
  const GradNorm norm =
      on_device() && !tp_comm_ && !zero1_ ? device_grad_norm() : reduce_grad_norm();
  st.grad_norm = norm.norm;
  const bool finite = std::isfinite(st.loss) && std::isfinite(st.grad_norm);
  if (!finite) {
    const std::string what = "step " + std::to_string(step) + ": loss " + std::to_string(st.loss) +
                             ", grad_norm " + std::to_string(st.grad_norm);
    if (!args_.skip_nonfinite_steps)
      fail("train", "non-finite " + what +
                        "; stopped before the optimizer step (hint: lower --learning_rate, check "
                        "the data, or pass --skip_nonfinite_steps to skip such updates)");
    ++skipped_steps_;
    if (++consecutive_nonfinite_ >= kMaxConsecutiveNonfinite)
      fail("train", "non-finite " + what + ", the " + std::to_string(kMaxConsecutiveNonfinite) +
                        "th such step in a row; stopping (hint: lower --learning_rate)");
    if (log_) log_->message("warning: skipped the update of non-finite " + what);
  } else {
    consecutive_nonfinite_ = 0;
    const double lr = args_.learning_rate * schedule_factor(schedule_, state_.global_step);
    model::ParameterSet& params = model_.trainable();
    // Under bf16 compute the update also rounds the new weights into their bf16 copies.
    if (zero1_)
      zero1_->step(params.values(), params.grads(), slices_, lr, params.bf16_arena(),
                   norm.clip_scale, /*gather_weights=*/!zero3_);
    else
      optimizer_->step(params.values(), params.grads(), slices_, lr, params.bf16_arena(),
                       norm.clip_scale);
    if (zero3_) zero3_->gather_kept_whole(params.values(), bf16_span());
  }
  if (zero2_)  // only the own shard holds anything (and only its pages are resident)
    zero2_->zero_own(model_.trainable().grads());
  else if (experts_)  // likewise the shared parameters' and this rank's experts' gradients
    experts_->zero_gradients(model_.trainable().grads());
  else
    model_.zero_grad();
}

void Trainer::log_train(const StepStats& last, double step_time_s) {
  const int64_t step = state_.global_step;
  Json e = Json::object();
  e["loss"] = loss_since_log_ / static_cast<double>(step - last_logged_step_);
  if (args_.max_grad_norm > 0) e["grad_norm"] = last.grad_norm;
  e["learning_rate"] = args_.learning_rate * schedule_factor(schedule_, step - 1);
  auto mean = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return v.empty() ? 0.0 : s / static_cast<double>(v.size());
  };
  e["entropy"] = mean(entropy_since_log_);
  e["num_tokens"] = static_cast<double>(total_tokens_);
  e["mean_token_accuracy"] = mean(acc_since_log_);
  if (!aux_since_log_.empty()) e["aux_loss"] = mean(aux_since_log_);
  e["epoch"] = state_.epoch;
  e["step"] = step;
  state_.log_history.push_back(e);
  total_loss_ += loss_since_log_;
  loss_since_log_ = 0;
  last_logged_step_ = step;
  acc_since_log_.clear();
  entropy_since_log_.clear();
  aux_since_log_.clear();
  if (log_) {
    Json full = e;
    const double secs = seconds_since_log_ > 0 ? seconds_since_log_ : NAN;
    full["tokens_per_second"] = tokens_since_log_ / secs;
    full["step_time_s"] = step_time_s;
    full["gflops"] = flops_since_log_ / secs / 1e9;
    if (comm_->size() > 1 || tp_comm_) {  // rank 0's time in collectives, waiting included
      const double total =
          comm_->collective_seconds() + (tp_comm_ ? tp_comm_->collective_seconds() : 0);
      full["comm_time_s"] = total - comm_seconds_at_log_;
      comm_seconds_at_log_ = total;
    }
    log_->log(full);
  }
  tokens_since_log_ = flops_since_log_ = seconds_since_log_ = 0;
}

TrainResult Trainer::train() {
  const std::string resume_path = resolve_resume_path();
  if (!resume_path.empty())
    resume(resume_path);
  else if (log_)
    log_->truncate_after(0);  // a fresh run (--overwrite_output_dir) starts a fresh metrics.jsonl
  // ZeRO-3: from here on each rank holds its shard (the layers, embedding and LM head gathered
  // per use; the runs kept whole gathered now, as a rank loaded only its shard of them).
  if (zero3_) {
    zero3_->release_layers(model_.trainable().values(), bf16_span());
    zero3_->gather_kept_whole(model_.trainable().values(), bf16_span());
  }
  // Expert parallelism: each rank keeps its experts only (loaded or drawn whole, or resumed).
  if (experts_) release_other_experts();
  if (log_) {
    log_->message(
        "training: " + std::to_string(plan_.max_steps) + " steps (" +
        std::to_string(plan_.num_epochs) + " epochs of " + std::to_string(plan_.updates_per_epoch) +
        "), global batch " +
        std::to_string(args_.per_device_train_batch_size * args_.gradient_accumulation_steps *
                       comm_->size()) +
        " rows, " + std::to_string(model_.num_parameters()) + " parameters" +
        (model_.lora() ? " (" + std::to_string(model_.trainable().numel()) + " trainable: LoRA)"
                       : "") +
        ", " + std::to_string(comm_->size()) + " data-parallel rank(s)" +
        (tp_comm_ ? " × " + std::to_string(tp_comm_->size()) + " tensor-parallel" : "") +
        (experts_ ? " in expert-parallel groups of " + std::to_string(setup_.ep_comm->size())
                  : "") +
        ", optimizer state " + std::to_string(optimizer_state_bytes()) + " bytes per rank" +
        (zero1_ ? " (ZeRO-" + std::to_string(args_.zero_stage) + ")" : "") +
        (resume_path.empty()
             ? ""
             : ", resumed from " + resume_path + " at step " + std::to_string(state_.global_step)));
  }
  // TrainingArguments.eval_on_start: one evaluation before the first step (on resume too).
  if (eval_ && args_.eval_on_start) evaluate();
  if (log_) log_->progress_begin(state_.global_step);  // the bar is there before step 1
  const double start = now_s();
  TrainResult result;
  const bool eval_steps = eval_ && args_.eval_strategy == "steps";
  const bool eval_epoch = eval_ && args_.eval_strategy == "epoch";
  const bool save_steps = args_.save_strategy == "steps";
  const bool save_epoch = args_.save_strategy == "epoch";
  while (state_.global_step < plan_.max_steps) {
    const MicroBatchRange range = micro_batches_of_update(plan_input_, update_in_epoch_);
    const double t0 = now_s();
    StepStats st = run_step(range.end - range.begin);
    apply_update(st);
    if (experts_ && is_main()) measure_resident_arenas();  // only rank 0 reports it
    ++state_.global_step;
    ++steps_this_session_;
    state_.epoch = epoch_progress(epoch_, range.end - 1, plan_input_.micro_batches_per_epoch);
    const bool epoch_end = ++update_in_epoch_ >= plan_.updates_per_epoch;
    if (epoch_end) {
      ++epoch_;
      update_in_epoch_ = 0;
    }
    total_tokens_ += st.tokens;
    state_.num_input_tokens_seen += st.padded_tokens;
    state_.total_flos += 6.0 * double(flos_params_) * double(st.padded_tokens);
    loss_since_log_ += st.loss;
    acc_since_log_.insert(acc_since_log_.end(), st.accuracy.begin(), st.accuracy.end());
    entropy_since_log_.insert(entropy_since_log_.end(), st.entropy.begin(), st.entropy.end());
    if (st.aux_loss) aux_since_log_.push_back(*st.aux_loss);
    const double step_time = now_s() - t0;
    tokens_since_log_ += static_cast<double>(st.tokens);
    flops_since_log_ += st.flops * (comm_->size() > 1 ? comm_->size() : 1);
    seconds_since_log_ += step_time;

    const int64_t step = state_.global_step;
    // DefaultFlowCallback: the last step evaluates and saves (steps strategies) but only logs
    // on schedule; the epoch hooks also run when max_steps ends an epoch early.
    const bool last = step >= plan_.max_steps;
    const bool epoch_hook = epoch_end || last;
    const bool do_log =
        args_.logging_strategy == "steps"
            ? (step % plan_.logging_steps == 0 || (step == 1 && args_.logging_first_step))
            : args_.logging_strategy == "epoch" && epoch_hook;
    if (do_log) log_train(st, step_time);
    if (log_) log_->step_done(step, st.loss);
    if ((eval_steps && (step % plan_.eval_steps == 0 || last)) || (eval_epoch && epoch_hook))
      evaluate();
    // Every rank must stop after the same step (a signal reaches them at different times).
    std::vector<int64_t> stop_votes = {stop_requested() ? 1 : 0};
    comm_->all_reduce_sum(std::span<int64_t>(stop_votes));
    if (tp_comm_) tp_comm_->all_reduce_sum(std::span<int64_t>(stop_votes));
    const bool stop = stop_votes[0] > 0;
    if ((save_steps && (step % plan_.save_steps == 0 || last)) || (save_epoch && epoch_hook) ||
        stop)
      save_whole();
    if (stop) {
      result.interrupted = true;
      break;
    }
  }
  // The export (and whatever reads the model after training) sees the whole model, unless the
  // caller writes it a tensor at a time (stream_model; tensor parallelism assembles slices).
  if (zero3_ && (!setup_.stream_export || model_.tensor_parallel().on()))
    zero3_->gather_everything(model_.trainable().values(), bf16_span());
  // Expert parallelism: the export (and whatever runs the model after training, on one rank)
  // reads the whole experts, with no exchange.
  if (experts_) {
    report_resident_arenas();  // what the steps kept resident, before the export's gather
    gather_experts(false);
    model_.set_expert_exchange(false);
  }
  if (!result.interrupted) log_final(now_s() - start);
  if (is_main() && !result.interrupted) {
    save_trainer_state(state_, args_.output_dir);
    write_curves();
  }
  result.global_step = state_.global_step;
  result.train_loss = (total_loss_ + loss_since_log_) /
                      std::max<double>(1.0, static_cast<double>(state_.global_step));
  result.skipped_steps = skipped_steps_;
  result.last_checkpoint = last_checkpoint_;
  return result;
}

}  // namespace sft
