// Evaluation and the end-of-run outputs (the final train log, training_curves.svg).
#include <cmath>

#include "core/clock.h"
#include "io/atomic_file.h"
#include "train/curve_plot.h"
#include "train/trainer.h"

namespace sft {

namespace {

double round_to(double v, int digits) {
  const double f = std::pow(10.0, digits);
  return std::round(v * f) / f;
}

}  // namespace

Json Trainer::evaluate() {
  if (!eval_) return Json::object();
  // ZeRO-3: ranks score different numbers of batches, so per-layer gathers would not pair up;
  // the evaluation runs on the whole model, gathered for it (trainer_parallel.cpp).
  if (zero3_ && zero3_->sharded()) return evaluate_whole();
  if (model_.expert_exchange_on()) return evaluate_whole_experts();
  const double t0 = now_s();
  const uint64_t bs = static_cast<uint64_t>(args_.per_device_eval_batch_size);
  const uint64_t n = eval_->num_rows();
  const uint64_t batches = (n + bs - 1) / bs;
  // Σ loss_b·rows_b, Σ rows_b, Σ accuracy_b, Σ entropy_b, batches scored (summed over ranks).
  std::vector<double> local(5, 0.0);
  for (uint64_t b = static_cast<uint64_t>(comm_->rank()); b < batches;
       b += static_cast<uint64_t>(comm_->size())) {
    std::vector<uint64_t> rows;
    for (uint64_t r = b * bs; r < std::min(n, (b + 1) * bs); ++r) rows.push_back(r);
    const MicroBatch mb = make_micro_batch(*eval_, rows, setup_.eval_batching);
    const model::LossStats ls = model_.forward(mb.batch);
    if (ls.count == 0) continue;  // HF's mean over no token is NaN; leave such batches out
    const double count = static_cast<double>(ls.count);
    local[0] += ls.loss_sum / count * static_cast<double>(mb.rows);
    local[1] += static_cast<double>(mb.rows);
    local[2] += static_cast<double>(ls.correct) / count;
    local[3] += ls.entropy_sum / count;
    local[4] += 1;
  }
  comm_->all_reduce_sum(std::span<double>(local));
  const double runtime = now_s() - t0;
  Json e = Json::object();
  e["eval_loss"] = local[1] > 0 ? local[0] / local[1] : NAN;
  e["eval_runtime"] = round_to(runtime, 4);
  if (runtime > 0) {
    e["eval_samples_per_second"] = round_to(static_cast<double>(n) / runtime, 3);
    e["eval_steps_per_second"] = round_to(static_cast<double>(batches) / runtime, 3);
  }
  e["eval_entropy"] = local[4] > 0 ? local[3] / local[4] : 0.0;
  // TRL logs its running train-token count under eval_num_tokens too.
  e["eval_num_tokens"] = static_cast<double>(total_tokens_);
  e["eval_mean_token_accuracy"] = local[4] > 0 ? local[2] / local[4] : 0.0;
  e["epoch"] = state_.epoch;
  e["step"] = state_.global_step;
  state_.log_history.push_back(e);
  if (log_) log_->log(e);
  return e;
}

void Trainer::log_final(double runtime_s) {
  const double samples =
      static_cast<double>(steps_this_session_ * args_.per_device_train_batch_size *
                          args_.gradient_accumulation_steps * comm_->size());
  Json e = Json::object();
  e["train_runtime"] = round_to(runtime_s, 4);
  if (runtime_s > 0) {
    e["train_samples_per_second"] = round_to(samples / runtime_s, 3);
    e["train_steps_per_second"] = round_to(static_cast<double>(steps_this_session_) / runtime_s, 3);
  }
  e["total_flos"] = state_.total_flos;
  e["train_loss"] = (total_loss_ + loss_since_log_) /
                    std::max<double>(1.0, static_cast<double>(state_.global_step));
  e["epoch"] = state_.epoch;
  e["step"] = state_.global_step;
  state_.log_history.push_back(e);
  if (log_) log_->log(e);
}

void Trainer::write_curves() const {
  CurveSeries loss{"train loss", "#1f77b4", {}}, eval_loss{"eval loss", "#d62728", {}};
  CurveSeries lr{"learning rate", "#2ca02c", {}};
  for (const Json& e : state_.log_history) {
    const double step = e.value("step", 0.0);
    if (e.contains("loss") && e["loss"].is_number())
      loss.points.push_back({step, e["loss"].get<double>()});
    if (e.contains("eval_loss") && e["eval_loss"].is_number())
      eval_loss.points.push_back({step, e["eval_loss"].get<double>()});
    if (e.contains("learning_rate") && e["learning_rate"].is_number())
      lr.points.push_back({step, e["learning_rate"].get<double>()});
  }
  CurvePanel loss_panel{"loss", {loss}};
  if (!eval_loss.points.empty()) loss_panel.series.push_back(eval_loss);
  const std::string svg = render_curves_svg("sft train: " + args_.output_dir,
                                            {loss_panel, CurvePanel{"learning rate", {lr}}});
  write_file_atomically(args_.output_dir + "/training_curves.svg", svg);
}

}  // namespace sft
