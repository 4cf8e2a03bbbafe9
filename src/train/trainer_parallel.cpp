// The distributed parts of the trainer that are not the step itself: ZeRO-2's gradient
// sharding (its layer hook), ZeRO-3's final model written a tensor at a time, the gradient norm
// over data-, tensor- and expert-parallel ranks, the experts gathered whole for checkpoints and
// evaluation under expert parallelism and the other ranks' released again after
// (train/expert_shards.h), the arenas' resident bytes that shows, and the optimizer memory.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "core/device.h"
#include "core/error.h"
#include "core/huge_buffer.h"
#include "core/log.h"
#include "core/page_release.h"
#include "core/resident_memory.h"
#include "optim/clip.h"
#include "optim/zero2.h"
#include "optim/zero_memory.h"
#include "parallel/groups.h"
#include "train/train_checkpoint.h"
#include "train/trainer.h"

namespace sft {

namespace {

// Σ g² of the gradients in [begin, end) of the flat arena, each replicated parameter's
// weighted 1 / tp_size: summed over the tensor-parallel ranks, the split parameters' squares
// then add up to the whole tensors' and the replicated ones (equal on every rank) count once.
double tp_weighted_sum_of_squares(const model::ParameterSet& params, std::span<const float> grads,
                                  size_t begin, size_t end, int tp_size) {
  const Device device = params.device();  // the sums run where the gradients are
  double split = 0, replicated = 0;
  for (const model::Parameter& p : params.all()) {
    const size_t lo = std::max(static_cast<size_t>(p.offset), begin);
    const size_t hi = std::min(static_cast<size_t>(p.offset + p.value.numel()), end);
    if (lo >= hi) continue;
    const double sq = ops::sum_of_squares(
        ops::view_of(grads.data() + lo, 1, static_cast<int64_t>(hi - lo), device));
    (p.spec.tp_dim < 0 ? replicated : split) += sq;
  }
  return split + replicated / tp_size;
}

// Each decoder layer's run of the trainable arena (optim/zero2.h's layer_runs; empty when the
// layers' parameters are not one run each): what ZeRO-2/3 shard and the overlap all-reduces.
std::vector<ShardRange> trainable_layer_runs(const model::Transformer& model) {
  std::vector<ParamPlace> places;
  for (const model::Parameter& p : model.trainable().all())
    places.push_back(
        {p.spec.layer, static_cast<size_t>(p.offset), static_cast<size_t>(p.value.numel())});
  return layer_runs(places, model.config().num_hidden_layers);
}

ShardRange run_of(const model::Parameter& p) {
  return {static_cast<size_t>(p.offset), static_cast<size_t>(p.offset + p.value.numel())};
}

}  // namespace

void Trainer::init_zero23() {
  // The non-own parts are zeroed and their pages released on the host (optim/zero_memory.h).
  if (model_.device() != Device::kCpu)
    fail("train", "--zero_stage " + std::to_string(args_.zero_stage) + " on " +
                      device_name(model_.device()) +
                      ": ZeRO-2/3 shard host memory only (hint: --zero_stage 1, or --use_cpu)");
  model::ParameterSet& t = model_.trainable();
  const std::vector<ShardRange> runs = trainable_layer_runs(model_);
  const size_t n = static_cast<size_t>(t.numel());
  zero2_ = std::make_unique<Zero2Grads>(n, runs, *comm_);
  zero2_->release_others(t.grads());
  // The layers' ranges are released and faulted in again every pass on the ranks that do not
  // own them (their gradients under ZeRO-2, their values too under ZeRO-3): on huge pages
  // that is one fault per 2 MiB, and the gathers' copies walk 512 times fewer pages. Only the
  // layers': they are written whole, where the tables' rows (the lookup's, its gradient's)
  // are touched a row here and there and would each bring a whole 2 MiB page in.
  for (const ShardRange& r : runs)
    advise_huge_pages(t.grads().data() + r.begin, r.size() * sizeof(float));
  // ZeRO-3 shards the embedding and LM head too, gathered per use (not with LoRA: there the
  // trainable set is the adapters, and a trained copy of those tables stays whole).
  const model::Parameter* embed = model_.lora() ? nullptr : t.find(ParamSlot::kEmbed);
  const model::Parameter* head = model_.lora() ? nullptr : t.find(ParamSlot::kLmHead);
  if (head == nullptr) head = embed;  // tied: the head multiplies the embedding table
  std::vector<ShardRange> per_use;
  for (const model::Parameter* p : {embed, head})
    if (p) per_use.push_back(run_of(*p));
  if (args_.zero_stage == 3) {
    zero3_ = std::make_unique<Zero3Params>(n, runs, *comm_, per_use);
    for (const ShardRange& r : runs) {
      advise_huge_pages(t.values().data() + r.begin, r.size() * sizeof(float));
      if (t.bf16_arena()) advise_huge_pages(t.bf16_arena() + r.begin, r.size() * sizeof(uint16_t));
    }
  }
  // A model loaded as a shard (cli: ZeRO-3's load) must be this ZeRO-3's shard.
  const model::ElementRun held = model_.trainable().held();
  if (!t.holds_all() && (!zero3_ || static_cast<size_t>(held.begin) != zero3_->shard().begin ||
                         static_cast<size_t>(held.end) != zero3_->shard().end))
    fail("train", "the model holds elements [" + std::to_string(held.begin) + ", " +
                      std::to_string(held.end) +
                      ") of its parameters, which is not this rank's ZeRO-3 shard");
  if (is_main() && runs.empty())
    log_info(
        "[train] ZeRO-2: the layers' parameters are not one run each, so the gradients "
        "are reduced after the whole backward");
  model::Transformer::LayerHooks hooks;
  hooks.after_backward = [this](int64_t l) {
    zero2_->layer_done(model_.trainable().grads(), l);
    if (zero3_) zero3_->release_layer(model_.trainable().values(), bf16_span(), l);
  };
  if (zero3_) {
    // Each gather starts the next layer's (the forward runs 0 .. L-1, the backward back down).
    const int64_t L = model_.config().num_hidden_layers;
    hooks.before_forward = [this, L](int64_t l) {
      zero3_->gather_layer(model_.trainable().values(), bf16_span(), l, l + 1 < L ? l + 1 : -1);
    };
    hooks.before_backward = [this](int64_t l) {
      zero3_->gather_layer(model_.trainable().values(), bf16_span(), l, l - 1);
    };
    hooks.after_forward = [this](int64_t l) {
      zero3_->release_layer(model_.trainable().values(), bf16_span(), l);
    };
  }
  // SFT_ZERO3_WHOLE_TABLES=1 keeps the whole-table gathers below (the same bits): an A/B
  // switch for measuring the two in one build (docs/benchmarks.md).
  const char* whole_tables = std::getenv("SFT_ZERO3_WHOLE_TABLES");
  if (zero3_ && embed && !tp_comm_ && !(whole_tables && std::string(whole_tables) == "1"))
    return init_zero3_tables(hooks, *embed, *head);
  if (zero3_ && embed) {
    // The lookup reads the fp32 table; the LM head reads its fp32 values, or under bf16 compute
    // only its bf16 copy. A tied fp32 table stays whole from the lookup to the head (one gather
    // a pass; the head's peak holds it anyway).
    const ShardRange e = run_of(*embed), h = run_of(*head);
    const bool keep = embed == head && model_.compute_dtype() == DType::kF32;
    auto head_f32 = [this] {
      return model_.compute_dtype() == DType::kF32 ? model_.trainable().values()
                                                   : std::span<float>();
    };
    auto head_bf16 = [this] {
      return model_.compute_dtype() == DType::kF32 ? std::span<uint16_t>() : bf16_span();
    };
    hooks.before_embedding = [this, e](std::span<const int64_t>) {
      zero3_->gather_run(model_.trainable().values(), {}, e);
    };
    hooks.after_embedding = [this, e, keep] {
      if (!keep) zero3_->release_run(model_.trainable().values(), {}, e);
    };
    hooks.before_head = [this, h, head_f32, head_bf16] {
      zero3_->gather_run(head_f32(), head_bf16(), h);
    };
    hooks.after_head = [this, h, head_f32, head_bf16] {
      zero3_->release_run(head_f32(), head_bf16(), h);
    };
  }
  model_.set_layer_hooks(std::move(hooks));
}

// ZeRO-3's tables without tensor parallelism: the lookup fetches only its rows
// (optim/zero3_rows.h); an fp32 head reads its weight a vocabulary block at a time
// (optim/zero3_head.h), a bf16 head its whole bf16 copy gathered per use as before. Outside the
// sharded steps (evaluation, saves) everything is whole and these move nothing.
void Trainer::init_zero3_tables(model::Transformer::LayerHooks& hooks,
                                const model::Parameter& embed, const model::Parameter& head) {
  const ShardRange e = run_of(embed), h = run_of(head);
  const auto width = static_cast<size_t>(embed.value.cols);
  zero3_rows_ = std::make_unique<Zero3TableRows>(*comm_, e, width);
  hooks.before_embedding = [this](std::span<const int64_t> ids) {
    if (zero3_->sharded()) zero3_rows_->fetch(model_.trainable().values(), ids);
  };
  hooks.after_embedding = [this] {
    if (zero3_->sharded()) zero3_rows_->release(model_.trainable().values());
  };
  if (model_.compute_dtype() != DType::kF32) {
    hooks.before_head = [this, h] { zero3_->gather_run({}, bf16_span(), h); };
    hooks.after_head = [this, h] { zero3_->release_run({}, bf16_span(), h); };
    return model_.set_layer_hooks(std::move(hooks));
  }
  // The head's gradient block by block, reduced at once: an untied head's whole block, a tied
  // table's rows that no rank's lookup adds to (the rest wait for the lookup's gradient, so
  // that each rank sums head + lookup before the reduction, as ZeRO-1 does: zero3_head.h).
  Zero3HeadBlocks::GradDone grad_done;
  if (&embed != &head)
    grad_done = [this](ShardRange r, std::span<float> block) {
      zero2_->reduce_early(model_.trainable().grads(), r, {}, block);
    };
  else
    grad_done = [this](ShardRange r, std::span<float> block) {
      zero2_->reduce_early(model_.trainable().grads(), r, zero3_rows_->any_fetched_in(r), block);
    };
  zero3_head_ = std::make_unique<Zero3HeadBlocks>(*comm_, h, width, std::move(grad_done));
  hooks.head_blocks = zero3_head_.get();
  hooks.before_head = [this] {
    model::ParameterSet& t = model_.trainable();
    zero3_head_->begin(t.values(), t.has_grads() ? t.grads() : std::span<float>(),
                       zero3_->sharded());
  };
  hooks.after_head = [this] { zero3_head_->end(); };
  model_.set_layer_hooks(std::move(hooks));
}

Json Trainer::evaluate_whole() {
  zero3_->gather_everything(model_.trainable().values(), bf16_span());
  const Json metrics = evaluate();
  zero3_->release_layers(model_.trainable().values(), bf16_span());
  return metrics;
}

std::span<uint16_t> Trainer::bf16_span() {
  model::ParameterSet& t = model_.trainable();
  uint16_t* b = t.bf16_arena();
  return b ? std::span<uint16_t>(b, static_cast<size_t>(t.numel())) : std::span<uint16_t>();
}

void Trainer::gather_experts(bool moments) {
  model::ParameterSet& t = model_.trainable();
  // Gathers run between optimizer steps, where the gradients hold zeros: their pages go back
  // first, so that the other ranks' experts coming in take their place (a checkpoint's peak is
  // then the whole values and moments and no gradient, not all four arenas).
  zero_and_release(t.grads().data(), t.grads().size_bytes());
  if (moments)
    experts_->gather_experts(t.values(), optimizer_->exp_avg().mutable_values<float>(),
                             optimizer_->exp_avg_sq().mutable_values<float>());
  else
    experts_->gather_experts(t.values());
  if (t.bf16_arena()) t.refresh_bf16_copies();
}

Json Trainer::evaluate_whole_experts() {
  gather_experts(false);
  model_.set_expert_exchange(false);
  const Json metrics = evaluate();
  model_.set_expert_exchange(true);
  release_other_experts();
  return metrics;
}

void Trainer::release_other_experts() {
  model::ParameterSet& t = model_.trainable();
  experts_->release_others(t.values());
  experts_->release_others(bf16_span());
  experts_->release_others(t.grads());
  experts_->release_others(optimizer_->exp_avg().mutable_values<float>());
  experts_->release_others(optimizer_->exp_avg_sq().mutable_values<float>());
}

void Trainer::measure_resident_arenas() {
  model::ParameterSet& t = model_.trainable();
  std::vector<std::span<const std::byte>> arenas = {
      std::as_bytes(std::span<const float>(t.values())),
      std::as_bytes(std::span<const float>(t.grads())),
      std::as_bytes(std::span<const float>(optimizer_->exp_avg().mutable_values<float>())),
      std::as_bytes(std::span<const float>(optimizer_->exp_avg_sq().mutable_values<float>()))};
  if (!bf16_span().empty()) arenas.push_back(std::as_bytes(std::span<const uint16_t>(bf16_span())));
  size_t resident = 0;
  arena_bytes_ = 0;
  for (std::span<const std::byte> a : arenas) {
    resident += resident_bytes(a.data(), a.size());
    arena_bytes_ += a.size();
  }
  most_resident_arena_bytes_ = std::max(most_resident_arena_bytes_, resident);
}

void Trainer::report_resident_arenas() const {
  if (is_main() && arena_bytes_ > 0)  // measured: this session ran a step
    log_info(
        "[train] expert parallelism: after each step rank 0's parameter, gradient and "
        "optimizer arenas held at most " +
        std::to_string(most_resident_arena_bytes_) + " resident bytes of " +
        std::to_string(arena_bytes_) + " (the other ranks' experts released: " +
        std::to_string(experts_->other_experts_bytes()) + " bytes of each fp32 arena)");
}

std::string Trainer::save_whole() {
  if (experts_) {  // the writer holds every expert and its moments, then this rank's again
    gather_experts(true);
    std::string path = save();
    release_other_experts();
    return path;
  }
  // Without tensor parallelism save() streams the layers a tensor at a time; a tp checkpoint
  // assembles the slices of whole layers (train/tp_gather.h), so they are gathered first.
  if (!zero3_ || !model_.tensor_parallel().on()) return save();
  zero3_->gather_everything(model_.trainable().values(), bf16_span());
  const std::string path = save();
  zero3_->release_layers(model_.trainable().values(), bf16_span());
  return path;
}

void Trainer::stream_model(const std::function<void(const WholeTensor&)>& write) {
  if (!model_sharded()) {
    if (is_main()) write({});
    return;
  }
  ZeroTensorStream stream(*comm_, 0, model_.trainable().values(), zero3_.get(), nullptr);
  if (!stream.is_root()) return stream.serve();
  write(whole_from_stream(model_, stream));
  stream.finish();
}

void Trainer::init_device_comms() {
  if (!on_device()) return;
  // Every rank makes them in the same order (NCCL's init is collective over each group).
  if (comm_->size() > 1) dp_device_ = make_device_comm(*comm_);
  const char* overlap = std::getenv("SFT_NCCL_OVERLAP");
  if (dp_device_ && args_.zero_stage == 0 && !(overlap && std::string(overlap) == "0"))
    init_overlap();
  if (!tp_comm_) return;
  tp_device_ = make_device_comm(*tp_comm_);
  auto* group = dynamic_cast<CommShardGroup*>(model_.tensor_parallel().group);
  if (!group)
    fail("train",
         "tensor parallelism on a device needs the model's group to be its tensor-"
         "parallel Comm's (parallel/groups.h: make_parallel_groups)");
  group->attach_device(tp_device_.get());
}

void Trainer::init_overlap() {
  const model::ParameterSet& t = model_.trainable();
  overlap_layers_ = trainable_layer_runs(model_);
  if (overlap_layers_.empty()) {  // then the one all-reduce after the backward
    if (is_main())
      log_info(
          "[train] the layers' parameters are not one run each: the gradients are all-reduced "
          "after the backward, not during it");
    return;
  }
  overlap_rest_ = runs_outside_layers(overlap_layers_, static_cast<size_t>(t.numel()), "overlap");
  model::Transformer::LayerHooks hooks;
  hooks.after_backward = [this](int64_t l) {
    if (!overlap_armed_) return;
    const ShardRange r = overlap_layers_[static_cast<size_t>(l)];
    dp_device_->start_all_reduce_sum(model_.trainable().grads().data() + r.begin, r.size());
    overlap_started_ = true;
  };
  model_.set_layer_hooks(std::move(hooks));
}

void Trainer::all_reduce_gradients() {
  std::span<float> grads = model_.trainable().grads();
  if (!dp_device_) return comm_->all_reduce_sum(grads);
  if (!overlap_started_) return dp_device_->all_reduce_sum(grads.data(), grads.size());
  // The layers' runs are on their way (the hook); the embedding, final norm and LM head follow
  // on the same stream, then the default stream waits for them all.
  for (const ShardRange& r : overlap_rest_)
    dp_device_->start_all_reduce_sum(grads.data() + r.begin, r.size());
  dp_device_->finish_started();
  overlap_started_ = false;
}

void Trainer::sum_partial_grads_over_tp() {
  for (const model::Parameter& p : model_.trainable().all())
    if (p.spec.tp_partial_grad && !p.grad.empty()) {
      float* g = p.grad.as<float>();
      const size_t n = static_cast<size_t>(p.grad.numel());
      if (tp_device_)
        tp_device_->all_reduce_sum(g, n);
      else
        tp_comm_->all_reduce_sum(std::span<float>(g, n));
    }
}

Trainer::GradNorm Trainer::reduce_grad_norm() {
  std::span<float> grads = model_.trainable().grads();
  const double max_norm = args_.max_grad_norm;
  auto with_clip = [&](double norm) { return GradNorm{norm, clip_coefficient(norm, max_norm)}; };
  if (experts_) {
    if (!tp_comm_) return with_clip(experts_->grad_norm(grads));
    // The experts are whole on every TP rank (counted once by grad_norm); the shared
    // parameters as tensor parallelism counts them, summed over the TP group.
    std::vector<double> shared = {0};
    for (const ShardRange& r : experts_->shared_runs())
      shared[0] +=
          tp_weighted_sum_of_squares(model_.trainable(), grads, r.begin, r.end, tp_comm_->size());
    tp_comm_->all_reduce_sum(std::span<double>(shared));
    return with_clip(experts_->grad_norm(grads, shared[0]));
  }
  if (!tp_comm_) {  // the one-group paths (their sums in the order the goldens were made with)
    if (zero2_) return with_clip(zero1_->shard_grad_norm(grads));  // reduced per micro-batch
    if (zero1_) return with_clip(zero1_->reduce_gradients(grads));
    return with_clip(global_grad_norm(std::span<const float>(grads)));
  }
  ShardRange mine = {0, grads.size()};
  if (zero1_) {
    if (!zero2_) zero1_->reduce_scatter(grads);
    mine = zero1_->shard();
  }
  std::vector<double> sq = {tp_weighted_sum_of_squares(model_.trainable(), grads, mine.begin,
                                                       mine.end, tp_comm_->size())};
  if (zero1_) comm_->all_reduce_sum(std::span<double>(sq));
  tp_comm_->all_reduce_sum(std::span<double>(sq));
  return with_clip(std::sqrt(sq[0]));
}

int64_t Trainer::optimizer_state_bytes() const {
  if (zero1_) return zero1_->state_bytes();
  return 2 * model_.trainable().numel() * static_cast<int64_t>(sizeof(float));
}

}  // namespace sft
