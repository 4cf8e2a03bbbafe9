// Trainer checkpoints: what save() writes beyond the model and optimizer (the position in
// the run and the logging accumulators, so a resumed run logs the same numbers), and the
// resume that reads it back.
//
// Tensor parallelism: a checkpoint is always the one a tp = 1 run writes (whole model in F32,
// whole moments), so it resumes with any tp size. save() gathers the slices (tp_gather.h,
// collectives over the model's tensor-parallel group, in the first data-parallel group only)
// and world rank 0 writes; resume() has every rank read only its blocks of the files.
// ZeRO without tensor parallelism: rank 0 writes the sharded state a tensor at a time as the
// other data-parallel ranks serve it (optim/zero_stream.h).
// training_state.json records tp_size: a resume with another tp size re-shards (one line in
// the log). Another data-parallel world_size resumes when rows per device × processes is the
// same (the loader's cursor counts global rows; ZeRO re-shards the whole moments it reads),
// and is refused otherwise, naming both ways to resume.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "core/error.h"
#include "train/agreed_failure.h"
#include "train/checkpoint_dir.h"
#include "train/device_step.h"
#include "train/tp_gather.h"
#include "train/train_checkpoint.h"
#include "train/trainer.h"

namespace sft {

namespace {

constexpr int kTrainingStateVersion = 1;

// JSON has no NaN: a non-finite double (a skipped step's loss) is stored as null.
Json number_or_null(double v) {
  return std::isfinite(v) ? Json(v) : Json(nullptr);
}
double number_from(const Json& v) {
  return v.is_null() ? std::numeric_limits<double>::quiet_NaN() : v.get<double>();
}

}  // namespace

Json Trainer::training_state_json() const {
  Json acc = Json::array(), ent = Json::array();
  for (double v : acc_since_log_) acc.push_back(number_or_null(v));
  for (double v : entropy_since_log_) ent.push_back(number_or_null(v));
  return {
      {"format", "sft.trainer"},
      {"version", kTrainingStateVersion},
      {"global_step", state_.global_step},
      {"epoch", epoch_},
      {"update_in_epoch", update_in_epoch_},
      {"loader", loader_->cursor_to_json()},
      {"scheduler",
       {{"type", std::string(schedule_type_name(schedule_.type))},
        {"warmup_steps", schedule_.warmup_steps},
        {"training_steps", schedule_.training_steps},
        {"last_epoch", state_.global_step}}},
      {"log",
       {{"loss_since_log", number_or_null(loss_since_log_)},
        {"last_logged_step", last_logged_step_},
        {"mean_token_accuracy", acc},
        {"entropy", ent},
        {"total_loss", number_or_null(total_loss_)},
        {"num_tokens", total_tokens_}}},
      {"skipped_steps", skipped_steps_},
      {"consecutive_nonfinite", consecutive_nonfinite_},
      {"seed", args_.seed},
      {"world_size", comm_->size()},
      {"tp_size", model_.tensor_parallel().size},
      {"per_device_train_batch_size", args_.per_device_train_batch_size},
      {"gradient_accumulation_steps", args_.gradient_accumulation_steps},
  };
}

void Trainer::restore_training_state(const Json& s, const std::string& source) {
  try {
    if (s.at("format") != "sft.trainer" || s.at("version").get<int>() != kTrainingStateVersion)
      fail_in_file("train", {source, ""}, "not a training state this version of sft writes",
                   "resume from a checkpoint written by `sft train`");
    auto same = [&](const char* key, int64_t now, const std::string& hint) {
      if (s.at(key).get<int64_t>() != now)
        fail_in_file("train", {source, key},
                     "the checkpoint was written with " + s.at(key).dump() + ", this run has " +
                         std::to_string(now),
                     hint);
    };
    auto same_flag = [&](const char* key, int64_t now) {
      same(key, now,
           "resume with the same --" + std::string(key) +
               " (and number of processes) as the interrupted run");
    };
    // The number of processes is no flag of sft's: it is mpirun's -np (or --nproc_per_node).
    // Another number resumes the same run when a micro-batch still spans the same rows (rows
    // per device × processes): the loader's cursor counts rows of the epoch's order, and the
    // files hold the whole model and moments, which each rank re-shards as it reads them.
    const int64_t ranks =
        s.at("world_size").is_number_integer() ? s.at("world_size").get<int64_t>() : 0;
    const int64_t rows_then = ranks * s.at("per_device_train_batch_size").get<int64_t>();
    const int64_t now = comm_->size();
    if (ranks != now && rows_then != now * args_.per_device_train_batch_size) {
      const std::string same_count =
          ranks > 1 ? "resume with as many processes as the interrupted run: mpirun -np " +
                          std::to_string(ranks) + " sft train ... (or sft train --nproc_per_node " +
                          std::to_string(ranks) + " ...)"
                    : "resume in one process, without mpirun, as the interrupted run was";
      const std::string same_rows = rows_then % now == 0
                                        ? "; or with " + std::to_string(now) +
                                              " process(es) --per_device_train_batch_size " +
                                              std::to_string(rows_then / now) + ", for the same " +
                                              std::to_string(rows_then) + " rows per micro-batch"
                                        : "";
      same("world_size", now, same_count + same_rows);
    }
    if (ranks != now && log_)
      log_->message("resuming " + source + " (written by " + std::to_string(ranks) +
                    " data-parallel rank(s)) with " + std::to_string(now) +
                    ": the same rows per micro-batch, the optimizer moments re-sharded");
    // Written before tensor parallelism: 1. Another tp size only re-shards the whole tensors.
    const int64_t tp_size = s.contains("tp_size") ? s.at("tp_size").get<int64_t>() : 1;
    const int tp_now = model_.tensor_parallel().size;
    if (tp_size != tp_now && log_)
      log_->message("resuming " + source + " (written with tp_size " + std::to_string(tp_size) +
                    ") with tp_size " + std::to_string(tp_now) +
                    ": the weights and optimizer moments are re-sharded");
    if (ranks == now) same_flag("per_device_train_batch_size", args_.per_device_train_batch_size);
    same_flag("gradient_accumulation_steps", args_.gradient_accumulation_steps);
    state_.global_step = s.at("global_step").get<int64_t>();
    epoch_ = s.at("epoch").get<int64_t>();
    update_in_epoch_ = s.at("update_in_epoch").get<int64_t>();
    loader_->restore_from_json(s.at("loader"));
    const Json& log = s.at("log");
    loss_since_log_ = number_from(log.at("loss_since_log"));
    last_logged_step_ = log.at("last_logged_step").get<int64_t>();
    acc_since_log_.clear();
    entropy_since_log_.clear();
    for (const Json& v : log.at("mean_token_accuracy")) acc_since_log_.push_back(number_from(v));
    for (const Json& v : log.at("entropy")) entropy_since_log_.push_back(number_from(v));
    total_loss_ = number_from(log.at("total_loss"));
    total_tokens_ = log.at("num_tokens").get<int64_t>();
    skipped_steps_ = s.at("skipped_steps").get<int64_t>();
    consecutive_nonfinite_ = s.at("consecutive_nonfinite").get<int>();
  } catch (const Json::exception& e) {
    fail_in_file("train", {source, ""}, std::string("malformed training state: ") + e.what(),
                 "resume from an intact checkpoint (an older checkpoint-<step>)");
  }
}

std::string Trainer::resolve_resume_path() const {
  if (!args_.resume_from_checkpoint) return "";
  const std::string& v = *args_.resume_from_checkpoint;
  if (v.empty() || v == "false" || v == "False") return "";
  if (v == "true" || v == "True") {
    const std::optional<CheckpointInfo> latest = latest_checkpoint(args_.output_dir);
    if (!latest) fail("train", explain_no_checkpoint(args_.output_dir));
    return latest->path;
  }
  if (!std::filesystem::exists(v + "/" + kCheckpointMarker) && !is_continuable_trl_checkpoint(v))
    fail("train", explain_not_a_checkpoint(v, args_.output_dir));
  return v;
}

// A transformers / TRL Trainer checkpoint (checkpoint_dir.h, is_continuable_trl_checkpoint): the
// model already holds its weights (`sft train` loads them from the folder); the step, epoch,
// data position, LR schedule position and log history come from its trainer_state.json. The
// AdamW moments and step stay fresh (optimizer.pt is a torch pickle). The TRL run's batch
// layout is not all recorded there, so its epoch at that step is checked against this run's.
void Trainer::continue_trl_run(const std::string& path) {
  if (log_) log_->message("[train] notice: " + trl_continue_notice(path));
  const std::string source = path + "/trainer_state.json";
  const TrainerState trl = load_trainer_state(path);
  const int64_t g = trl.global_step;
  if (trl.train_batch_size && *trl.train_batch_size != args_.per_device_train_batch_size)
    fail_in_file(
        "train", {source, "train_batch_size"},
        "the TRL run had " + std::to_string(*trl.train_batch_size) +
            " rows per device, this run has " + std::to_string(args_.per_device_train_batch_size),
        "continue it with --per_device_train_batch_size " + std::to_string(*trl.train_batch_size));
  const int64_t per_epoch = plan_.updates_per_epoch;
  if (g > 0) {  // where step g ends in this run's plan must be where it ended in TRL's
    const MicroBatchRange last = micro_batches_of_update(plan_input_, (g - 1) % per_epoch);
    const double expected =
        epoch_progress((g - 1) / per_epoch, last.end - 1, plan_input_.micro_batches_per_epoch);
    if (std::fabs(expected - trl.epoch) > 1e-6 * std::max(1.0, expected))
      fail_in_file("train", {source, "epoch"},
                   "step " + std::to_string(g) + " ended at epoch " + Json(trl.epoch).dump() +
                       " in the TRL run, at epoch " + Json(expected).dump() +
                       " with this run's data and batch settings",
                   "continue it with the TRL run's dataset, --per_device_train_batch_size, "
                   "--gradient_accumulation_steps and number of processes");
  }
  state_ = trl;
  epoch_ = g / per_epoch;
  update_in_epoch_ = g % per_epoch;
  const MicroBatchRange next = micro_batches_of_update(plan_input_, update_in_epoch_);
  const uint64_t rows_per_micro_batch = static_cast<uint64_t>(args_.per_device_train_batch_size) *
                                        static_cast<uint64_t>(comm_->size());
  loader_->restore(
      {static_cast<uint64_t>(epoch_), static_cast<uint64_t>(next.begin) * rows_per_micro_batch});
  // The logging accumulators: nothing since the last log; the run's totals from its log.
  loss_since_log_ = 0;
  last_logged_step_ = g;
  acc_since_log_.clear();
  entropy_since_log_.clear();
  total_loss_ = 0;
  int64_t previous = 0;
  for (const Json& e : trl.log_history) {
    if (!e.contains("loss") || !e.contains("step") || !e["loss"].is_number()) continue;
    const int64_t step = e["step"].get<int64_t>();
    total_loss_ += e["loss"].get<double>() * static_cast<double>(step - previous);
    previous = step;
    if (e.contains("num_tokens") && e["num_tokens"].is_number())
      total_tokens_ = static_cast<int64_t>(e["num_tokens"].get<double>());
  }
  skipped_steps_ = 0;
  consecutive_nonfinite_ = 0;
}

void Trainer::resume(const std::string& path) {
  // Every rank reads the same checkpoint against the same flags: a refusal is printed once.
  agree_on_failure({comm_, tp_comm_}, is_main(), [&] { resume_unagreed(path); });
}

void Trainer::resume_unagreed(const std::string& path) {
  if (!std::filesystem::exists(path + "/" + kCheckpointMarker)) {
    continue_trl_run(path);
    finish_resume();
    return;
  }
  TrainingSnapshot snapshot;
  snapshot.model = &model_;
  snapshot.optimizer = optimizer_.get();
  snapshot.trainer_state = &state_;
  // ZeRO: the checkpoint holds the whole moments; every rank reads only its shard of them
  // (tensor parallelism: reads them whole, then keeps its shard).
  std::unique_ptr<AdamW> whole;
  std::optional<ShardRange> moment_shard;
  if (zero1_ && !model_.tensor_parallel().on() && !on_device()) {
    snapshot.optimizer = &zero1_->shard_optimizer();
    moment_shard = zero1_->shard();
  } else if (zero1_) {
    whole = std::make_unique<AdamW>(static_cast<size_t>(model_.trainable().numel()),
                                    zero1_->shard_optimizer().options());
    snapshot.optimizer = whole.get();
  }
  // A device run reads into host copies, then uploads them (train/device_step.h).
  std::optional<model::Transformer> host_model;
  std::optional<AdamW> host_optimizer;
  if (on_device()) {
    host_model.emplace(host_copy(model_));
    snapshot.model = &*host_model;
    if (optimizer_) {  // under ZeRO-1 `whole` is on the host already and load_from uploads
      host_optimizer.emplace(optimizer_->copy_to(Device::kCpu));
      snapshot.optimizer = &*host_optimizer;
    }
  }
  read_training_checkpoint(path, snapshot, moment_shard);
  if (whole) zero1_->load_from(*whole);
  if (host_model) {
    model_.trainable().copy_values_from(host_model->trainable());
    if (host_optimizer) optimizer_->copy_state_from(*host_optimizer);
  }
  restore_training_state(snapshot.training_state, path + "/training_state.json");
  finish_resume();
}

void Trainer::finish_resume() {
  // This run's plan wins over the checkpoint's (a resume may extend max_steps).
  state_.max_steps = plan_.max_steps;
  state_.logging_steps = plan_.logging_steps;
  state_.eval_steps = plan_.eval_steps;
  state_.save_steps = plan_.save_steps;
  state_.num_train_epochs = plan_.num_epochs;
  state_.train_batch_size = args_.per_device_train_batch_size;  // another world size: its own
  if (log_) log_->truncate_after(state_.global_step);
}

std::string Trainer::save() {
  const int64_t step = state_.global_step;
  std::string path;
  const model::TensorParallel& tp = model_.tensor_parallel();
  // ZeRO: rank 0 writes the moments (and under ZeRO-3 the layers' weights) a tensor at a time,
  // each gathered from the ranks as the writer reaches it while the others serve it
  // (optim/zero_stream.h): the checkpoint is the same as without sharding, and no rank holds
  // more than its shard and one tensor. With tensor parallelism the moments are assembled
  // whole (on every rank, for the collective) and the slices gathered below.
  std::optional<ZeroTensorStream> stream;
  if (zero1_ && !tp.on() && !on_device())
    stream.emplace(*comm_, 0, model_.trainable().values(), zero3_.get(), zero1_.get());
  std::unique_ptr<AdamW> whole;
  if (zero1_ && !stream) {
    whole = std::make_unique<AdamW>(static_cast<size_t>(model_.trainable().numel()),
                                    zero1_->shard_optimizer().options());
    zero1_->gather_into(*whole);
  }
  AdamW* optimizer = zero1_ ? whole.get() : optimizer_.get();
  // Tensor parallelism: the unsplit model and moments, assembled per tensor on the tensor-
  // parallel group's rank 0. Only the first data-parallel group's ranks gather (the ranks of a
  // tensor-parallel group share their data-parallel rank); world rank 0 is its rank 0.
  std::optional<model::Transformer> full_model;
  std::optional<AdamW> full_optimizer;
  // A device run: the weights and moments streamed to the host, written as a CPU run's.
  if (on_device() && is_main() && !tp.on()) {
    full_model.emplace(host_copy(model_));
    if (optimizer) full_optimizer.emplace(optimizer->copy_to(Device::kCpu));
  }
  if (tp.on() && comm_->rank() == 0) {
    // On a device every rank of the group gathers from host copies of its slices.
    std::optional<model::Transformer> local_model;
    std::optional<AdamW> local_optimizer;
    if (on_device()) {
      local_model.emplace(host_copy(model_));
      if (optimizer && optimizer->device() != Device::kCpu)
        local_optimizer.emplace(optimizer->copy_to(Device::kCpu));
    }
    const model::Transformer& slices = local_model ? *local_model : model_;
    const AdamW* moments = local_optimizer ? &*local_optimizer : optimizer;
    full_model = gather_full_model(slices, *tp.group);
    if (moments) full_optimizer = gather_full_moments(slices, *moments, *tp.group);
  }
  if (is_main()) {
    TrainingSnapshot snapshot;
    const bool copied = tp.on() || on_device();
    snapshot.model = copied ? &*full_model : &model_;
    snapshot.optimizer = copied ? (full_optimizer ? &*full_optimizer : nullptr) : optimizer;
    snapshot.trainer_state = &state_;
    snapshot.training_state = training_state_json();
    try {
      path = save_checkpoint(args_.output_dir, step, [&](const std::string& folder) {
        write_training_checkpoint(folder, snapshot, setup_.export_options,
                                  stream ? &*stream : nullptr);
        if (stream) stream->finish();  // the others go on to the barrier while this one syncs
        test_faults_.during_save(step);
      });
      if (args_.save_total_limit && *args_.save_total_limit >= 1)
        rotate_checkpoints(args_.output_dir, *args_.save_total_limit);
    } catch (const Error& e) {
      // Name a resume only when there is a complete checkpoint to resume from.
      const std::optional<CheckpointInfo> earlier = latest_checkpoint(args_.output_dir);
      fail("train", "saving checkpoint-" + std::to_string(step) + " failed: " + e.what() +
                        (earlier ? " (earlier checkpoints in " + args_.output_dir +
                                       " are intact, the latest " + earlier->path +
                                       "; hint: check free disk space and permissions, then "
                                       "resume with --resume_from_checkpoint true)"
                                 : " (no checkpoint was completed in " + args_.output_dir +
                                       "; hint: check free disk space and permissions, then run "
                                       "the same command again)"));
    }
    write_curves();
    if (log_) log_->message("saved " + path);
    if (setup_.on_checkpoint) setup_.on_checkpoint(path, step);
  } else if (stream) {
    stream->serve();
  }
  if (comm_->size() > 1) comm_->barrier();
  if (tp.on()) {  // the group's other ranks wait for the files too (a sum is its barrier)
    float done = 0;
    tp.group->sum(std::span<float>(&done, 1));
  }
  last_checkpoint_ = path;
  return path;
}

}  // namespace sft
