// The training loop with transformers' Trainer semantics (as TRL's SFTTrainer runs it):
//
//   global batch = per_device_train_batch_size × gradient_accumulation_steps × world size.
//   Loss normalisation: the targets (shifted labels != -100) of every micro-batch of the
//   step on every rank are counted first (HF's num_items_in_batch); each micro-batch then
//   adds the gradient of loss_sum / N, gradients are summed over ranks. So 1×GAS8 and 8×GAS1
//   give the same loss and gradients, and the logged loss is Σ loss / N of the step.
//   Per step: the global gradient norm (logged as grad_norm, before clipping), AdamW at
//   lr × factor(step) reading each gradient times clip_grad_norm_'s coefficient (the clip
//   folded into the update's pass: the same products, one pass over memory fewer), then the
//   scheduler advances. Steps and epochs from plan_steps; row order from
//   data::Loader (TRL's seeded order per epoch, or sequential).
//
// Logging (every logging_steps, + logging_first_step): HF's log_history keys — loss (mean
// over the steps since the last log), grad_norm, learning_rate (the one this step used),
// epoch, step — TRL's num_tokens, mean_token_accuracy, entropy (means over the micro-batches
// since the last log), plus "tokens_per_second", "step_time_s", "comm_time_s" (seconds in
// collectives since the last log, several ranks only) and "gflops" (achieved model
// FLOP/s: 6 · matmul parameters · tokens + causal attention 6 · 2·H·D·n(n+1)/2 per layer and
// document; recomputation by gradient checkpointing not counted). Eval logs eval_loss
// (mean of per-batch mean losses weighted by rows, as HF), eval_mean_token_accuracy,
// eval_entropy, eval_num_tokens (TRL's running train count), eval_runtime,
// eval_samples_per_second, eval_steps_per_second.
//
// Faults: a non-finite loss or grad_norm stops before the optimizer step with an error
// naming the step, or with skip_nonfinite_steps the update is skipped and counted (abort
// after kMaxConsecutiveNonfinite in a row). A stop request (SIGINT/SIGTERM, stop_signal.h)
// ends the current step, writes a checkpoint and returns interrupted = true. A failed save
// throws; earlier checkpoints stay intact (checkpoint_dir.h).
//
// Checkpoints (save_strategy, save_steps, save_total_limit) hold the model, AdamW moments,
// scheduler step, loader cursor and the logging accumulators; resume_from_checkpoint (a
// path, or "true" for the latest in output_dir) continues bit for bit on CPU.
//
// Device (the model moved by Transformer::to_device, e.g. `sft train` on a GPU): the step runs
// there — forward, backward, the gradient norm, clipping and AdamW with its moments on the
// device (train/device_step.h); checkpoints are written from host copies streamed off the
// device and a resume uploads them. What is not on the device yet is refused at construction.
// With several ranks there the gradient all-reduce, ZeRO-1's reduce-scatter and gathers and the
// tensor-parallel sums of device arrays run on NCCL communicators beside comm and tp_comm
// (parallel/device_comm.h: NCCL's sums, not Comm's double sums in rank order).
//
// Tensor parallel (`tp_comm`, tensor_parallel.h): the model holds this rank's slices and
// combines them itself; the ranks of a tensor-parallel group see the same batch, loss and
// statistics. The gradient norm sums the split parameters over the group and counts the
// replicated ones once; world rank 0 writes everything.
//
// Data parallel (`comm` is the data-parallel group; parallel/comm.h): each rank trains its slice
// of every global batch (data::Loader's rank = DP rank); the target count N, the logged
// counts (train/step_counts.h) and the gradients are summed over ranks (i64, f64 and bucketed f32
// all-reduces, once per optimizer step, not overlapped with the backward), so every rank applies
// the same update and the logs equal a one-process run. Only rank 0 writes logs, checkpoints and
// the export. A non-finite loss or gradient on one rank is non-finite in the sums on all,
// so all stop before the update. With --zero_stage 1 the gradients are reduce-scattered
// instead and optim/zero1.h updates each rank's shard; with --zero_stage 2 they are
// reduce-scattered per layer as the backward completes it (optim/zero2.h), and with
// --zero_stage 3 the layers' weights are sharded too, gathered around each pass
// (optim/zero3.h); checkpoints and the export still hold the whole model, written a tensor
// at a time (optim/zero_stream.h).
//
// Expert parallel (`ep_comm`, train/expert_shards.h): the model runs its share of the experts
// on the rows every rank of its group routes to them; the expert stacks' gradients are summed
// over the expert-data-parallel group, the rest over the data-parallel ranks; AdamW steps the
// own experts only; checkpoints, evaluation and the export gather the experts whole first.
//
// Test hooks (SFT_TEST_FAULT, SFT_TEST_KILL_DURING_SAVE): train/test_faults.h, called at its
// named points of a step and a save.
#pragma once

#include <functional>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/loader.h"
#include "data/prepare.h"
#include "model/transformer.h"
#include "optim/adamw.h"
#include "optim/schedule.h"
#include "optim/zero1.h"
#include "optim/zero2.h"
#include "optim/zero3.h"
#include "optim/zero3_head.h"
#include "optim/zero3_rows.h"
#include "parallel/comm.h"
#include "parallel/device_comm.h"
#include "train/args.h"
#include "train/batch.h"
#include "train/expert_shards.h"
#include "train/export.h"
#include "train/metrics_log.h"
#include "train/step_counts.h"
#include "train/step_plan.h"
#include "train/test_faults.h"
#include "train/trainer_state.h"

namespace sft {

inline constexpr int kMaxConsecutiveNonfinite = 5;

struct TrainerSetup {
  const TrainingArgs* args = nullptr;
  model::Transformer* model = nullptr;
  const data::PreparedDataset* train = nullptr;
  const data::PreparedDataset* eval = nullptr;  // null: no evaluation
  Comm* comm = nullptr;                         // the data-parallel group
  Comm* tp_comm = nullptr;  // the tensor-parallel group when tp_size > 1 (the model's), else null
  // Expert parallelism (ep_size > 1, train/expert_shards.h): the expert-parallel group (the
  // model's, enable_expert_parallel) and the expert-data-parallel group; else null.
  Comm* ep_comm = nullptr;
  Comm* expert_dp_comm = nullptr;
  BatchOptions batching;         // train micro-batches
  BatchOptions eval_batching;    // eval micro-batches
  ExportOptions export_options;  // the model part of each checkpoint
  bool shuffle = true;           // TRL's default sampler shuffles (seed = data_seed or seed)
  bool console_progress = true;  // live bar on a terminal
  // Called on the main rank after each checkpoint is written (--push_to_hub every_save).
  std::function<void(const std::string& checkpoint, int64_t step)> on_checkpoint;
  // ZeRO-3 without tensor parallelism: train() leaves the layers sharded, for the caller to
  // write the final model with stream_model() (else they are gathered whole at the end).
  bool stream_export = false;
};

struct TrainResult {
  int64_t global_step = 0;
  double train_loss = 0;
  bool interrupted = false;
  int64_t skipped_steps = 0;
  std::string last_checkpoint;  // "" when none was written
};

class Trainer {
 public:
  explicit Trainer(const TrainerSetup& setup);
  ~Trainer();

  TrainResult train();
  // Runs the eval set; returns the eval_* metrics (and logs them).
  Json evaluate();

  // After train() with setup.stream_export: whether the model is sharded now (ZeRO-3), and
  // the final model's writing: `write` runs on world rank 0 with the tensors made whole one at
  // a time (optim/zero_stream.h) while the other ranks serve them; every rank calls it.
  bool model_sharded() const { return zero3_ && zero3_->sharded(); }
  void stream_model(const std::function<void(const WholeTensor& whole)>& write);

  const TrainerState& state() const { return state_; }
  const StepPlan& plan() const { return plan_; }

 private:
  // Construction, in order: the loader and step plan, the model's training state with the
  // optimizer and schedule, trainer_state, and (main rank) the logs.
  void init_loader_and_plan();
  void init_model_and_optimizer();
  void init_state();
  void init_log();
  struct StepStats {
    double loss = 0;  // Σ loss / N over the global batch
    double grad_norm = 0;
    int64_t tokens = 0;  // real tokens of the global batch
    int64_t padded_tokens = 0;
    double flops = 0;
    std::vector<double> accuracy, entropy;  // per micro-batch, over all ranks
    // Mixture of experts: the load-balancing loss, its mean over the micro-batches of every
    // rank (TRL's aux_loss metric; already weighted into `loss`); nullopt without experts or
    // with a zero router_aux_loss_coef.
    std::optional<double> aux_loss;
  };
  // A step's forward and backward passes, in the order they run (trainer.cpp).
  StepStats run_step(int64_t num_micro_batches);
  std::vector<MicroBatch> next_micro_batches(int64_t count);
  double count_targets(const std::vector<MicroBatch>& mbs);  // over every rank
  StepCounts run_micro_batches(const std::vector<MicroBatch>& mbs, double n_global, double& flops);
  void reduce_step(StepCounts& counts);
  void apply_update(StepStats& stats);
  void log_train(const StepStats& last, double step_time_s);
  void log_final(double runtime_s);
  std::vector<uint64_t> next_rows();
  void arm_neftune(const MicroBatch& mb, size_t index);  // --neftune_noise_alpha
  std::string save();
  void resume(const std::string& checkpoint);
  void resume_unagreed(const std::string& checkpoint);  // trainer_checkpoint.cpp
  void continue_trl_run(const std::string& checkpoint);
  void finish_resume();
  int64_t optimizer_state_bytes() const;  // trainer_parallel.cpp
  // trainer_parallel.cpp: zero2_ (and zero3_) and the model's layer hooks.
  void init_zero23();
  void init_zero3_tables(model::Transformer::LayerHooks& hooks, const model::Parameter& embed,
                         const model::Parameter& head);
  // save(), under ZeRO-3 with the whole model gathered for it and freed after.
  std::string save_whole();
  Json evaluate_whole();  // evaluate(), the same way
  // Expert parallelism (trainer_parallel.cpp): every expert whole on every rank (with the
  // moments for a checkpoint; bf16 copies refreshed; between steps only, as it releases the
  // zero gradients' pages first), and evaluate() on the whole experts with
  // the exchange paused (ranks score different numbers of batches).
  void gather_experts(bool moments);
  Json evaluate_whole_experts();
  // The other ranks' experts released again from every arena (values, bf16 copies, gradients,
  // moments: train/expert_shards.h).
  void release_other_experts();
  // The arenas' resident bytes (core/resident_memory.h) after each step, the largest reported
  // on rank 0 at the end: what expert parallelism's memory saving is checked by.
  void measure_resident_arenas();
  void report_resident_arenas() const;
  std::span<uint16_t> bf16_span();  // the trainable bf16 arena, or empty
  std::string resolve_resume_path() const;
  Json training_state_json() const;
  void restore_training_state(const Json& state, const std::string& source);
  void write_curves() const;
  // World rank 0: data-parallel rank 0 and tensor-parallel rank 0.
  bool is_main() const { return comm_->rank() == 0 && tp_rank() == 0; }
  int tp_rank() const { return tp_comm_ ? tp_comm_->rank() : 0; }
  int world_rank() const { return comm_->rank() * (tp_comm_ ? tp_comm_->size() : 1) + tp_rank(); }
  // The gradient norm over all ranks (logged as grad_norm) and the coefficient that clips the
  // gradients to max_grad_norm (optim/clip.h), which AdamW applies as it reads them; under
  // ZeRO-1 this also reduce-scatters them (trainer_parallel.cpp).
  struct GradNorm {
    double norm = 0;
    float clip_scale = 1.0f;
  };
  GradNorm reduce_grad_norm();
  // A model on a device (Transformer::to_device): the norm there, one process only
  // (train/device_step.cpp).
  bool on_device() const { return model_.trainable().device() != Device::kCpu; }
  GradNorm device_grad_norm();
  // q_norm / k_norm under tensor parallelism: each rank's gradient covers its own heads.
  void sum_partial_grads_over_tp();
  // A model on a device with several ranks: NCCL communicators beside comm_ and tp_comm_
  // (parallel/device_comm.h), the model's tensor-parallel group routed to the latter
  // (trainer_parallel.cpp).
  void init_device_comms();
  // The data-parallel gradient all-reduce (without ZeRO), on the device's communicator there:
  // with the overlap, each decoder layer's run was started as the last micro-batch's backward
  // completed it (init_overlap's hook), so only the rest is left to start, then all are waited
  // for.
  void all_reduce_gradients();
  void init_overlap();
  double step_flops(const model::Batch& batch) const;

  const TrainingArgs& args_;
  model::Transformer& model_;
  const data::PreparedDataset& train_;
  const data::PreparedDataset* eval_;
  Comm* comm_;
  Comm* tp_comm_;
  // On a device: NCCL over comm_'s ranks when it has several, over tp_comm_'s when there is one.
  std::unique_ptr<DeviceComm> dp_device_, tp_device_;
  // Backward/communication overlap on the device (SFT_NCCL_OVERLAP=0 turns it off): the layers'
  // runs of the gradient arena (optim/zero2.h's layer_runs; empty: no overlap) and the rest;
  // armed during the step's last backward; whether any run was started this step.
  std::vector<ShardRange> overlap_layers_, overlap_rest_;
  bool overlap_armed_ = false, overlap_started_ = false;
  TrainerSetup setup_;
  TestFaults test_faults_;  // after comm_ and tp_comm_: it needs world_rank()
  // The load-balancing loss's weight (train/moe_args.h: the flag's, else the config's); 0 =
  // off, as without experts (TRL logs no aux_loss then).
  double aux_coef_ = 0;

  StepPlanInput plan_input_;
  StepPlan plan_;
  std::unique_ptr<data::Loader> loader_;
  std::unique_ptr<AdamW> optimizer_;    // null under ZeRO-1
  std::unique_ptr<Zero1> zero1_;        // --zero_stage >= 1: moments sharded over the DP ranks
  std::unique_ptr<Zero2Grads> zero2_;   // --zero_stage >= 2: gradients reduced per layer
  std::unique_ptr<Zero3Params> zero3_;  // --zero_stage 3: the layers' weights gathered per use
  // ZeRO-3 without tensor parallelism: the lookup's rows fetched, an fp32 head's weight
  // gathered a vocabulary block at a time (null otherwise: the tables gathered whole per use).
  std::unique_ptr<Zero3TableRows> zero3_rows_;
  std::unique_ptr<Zero3HeadBlocks> zero3_head_;
  std::unique_ptr<ExpertShards> experts_;  // --ep_size > 1: the expert stacks' own blocks
  size_t arena_bytes_ = 0, most_resident_arena_bytes_ = 0;  // measure_resident_arenas
  std::vector<ParamSlice> slices_;
  ScheduleConfig schedule_;
  TrainerState state_;
  std::unique_ptr<MetricsLog> log_;
  double matmul_params_ = 0;  // the weights one token multiplies through (k of E experts)
  int64_t flos_params_ = 0;

  // Position in the run.
  int64_t epoch_ = 0;            // epoch the loader is in
  int64_t update_in_epoch_ = 0;  // next update within it
  // Logging accumulators since the last log (saved in checkpoints, so a resume logs the same).
  double loss_since_log_ = 0;
  int64_t last_logged_step_ = 0;
  bool reported_activations_ = false;
  std::vector<double> acc_since_log_, entropy_since_log_, aux_since_log_;
  double total_loss_ = 0;  // Σ step losses (train_loss at the end)
  int64_t total_tokens_ = 0;
  int64_t skipped_steps_ = 0;
  int consecutive_nonfinite_ = 0;
  // Speed, since the last log (not saved: wall-clock).
  double tokens_since_log_ = 0, flops_since_log_ = 0, seconds_since_log_ = 0;
  double comm_seconds_at_log_ = 0;  // comm_->collective_seconds() at the last log
  int64_t steps_this_session_ = 0;
  std::string last_checkpoint_;
};

}  // namespace sft
