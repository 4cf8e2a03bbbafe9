// Whole model and whole moments from tensor-parallel slices; see tp_gather.h.
#include "train/tp_gather.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"
#include "model/param_slices.h"

namespace sft {

namespace {

constexpr std::string_view kComponent = "train";

// The model must be a slice over this very group, or the blocks would be misplaced.
void check_group(const model::Transformer& local, const ShardGroup& group, const char* what) {
  const model::TensorParallel& tp = local.tensor_parallel();
  if (tp.size != group.size() || tp.rank != group.rank())
    fail(kComponent, std::string(what) + ": the model is rank " + std::to_string(tp.rank) + " of " +
                         std::to_string(tp.size) + " tensor-parallel slices, the group rank " +
                         std::to_string(group.rank()) + " of " + std::to_string(group.size()) +
                         " (hint: pass the model's own group, model.tensor_parallel().group)");
  if (local.lora())
    fail(kComponent, std::string(what) +
                         ": a LoRA model is never split over tensor-parallel "
                         "ranks; write it as it is");
}

// Every tensor of `local` (its flat values at p.offset) gathered whole; `dst(i)` is where
// tensor i's whole values go on rank 0 (elsewhere a receive buffer reused per tensor).
template <typename Dst>
void gather_each(std::span<const model::Parameter> local, const float* local_values,
                 ShardGroup& group, Dst dst) {
  int64_t largest = 0;
  for (const model::Parameter& p : local)
    largest = std::max(largest, shape_numel(p.spec.whole_shape()));
  std::vector<float> scratch(group.rank() == 0 ? 0 : static_cast<size_t>(largest));
  for (size_t i = 0; i < local.size(); ++i) {
    const model::Parameter& p = local[i];
    float* full = group.rank() == 0 ? dst(i) : scratch.data();
    model::gather_blocks(p.spec, local_values + p.offset, full, group);
  }
}

}  // namespace

std::optional<model::Transformer> gather_full_model(const model::Transformer& local,
                                                    ShardGroup& group) {
  check_group(local, group, "gather_full_model");
  std::span<const model::Parameter> slices = local.params().all();
  std::optional<model::Transformer> whole;
  if (group.rank() == 0) {
    whole.emplace(model::Transformer::zeros(local.config()));
    if (whole->params().all().size() != slices.size())
      fail(kComponent, "gather_full_model: the slices and the whole model differ in parameters");
  }
  gather_each(slices, local.params().values().data(), group,
              [&](size_t i) { return whole->params().all()[i].value.as<float>(); });
  // bf16 compute: the copies are made from the gathered values.
  if (whole && local.compute_dtype() != DType::kF32)
    whole->set_compute_dtype(local.compute_dtype());
  return whole;
}

std::optional<AdamW> gather_full_moments(const model::Transformer& local,
                                         const AdamW& local_optimizer, ShardGroup& group) {
  check_group(local, group, "gather_full_moments");
  const model::ParameterSet& params = local.trainable();
  if (local_optimizer.exp_avg().numel() != params.numel() ||
      local_optimizer.exp_avg_sq().numel() != params.numel())
    fail(kComponent, "gather_full_moments: the optimizer holds " +
                         std::to_string(local_optimizer.exp_avg().numel()) +
                         " moments for a slice of " + std::to_string(params.numel()) +
                         " trainable parameters");
  // The whole model's flat order: the same tensors, packed back to back at their whole size.
  std::vector<int64_t> whole_offset;
  int64_t numel = 0;
  for (const model::Parameter& p : params.all()) {
    whole_offset.push_back(numel);
    numel += shape_numel(p.spec.whole_shape());
  }
  std::optional<AdamW> whole;
  if (group.rank() == 0) {
    whole.emplace(static_cast<size_t>(numel), local_optimizer.options());
    whole->set_steps_taken(local_optimizer.steps_taken());
  }
  for (int moment = 0; moment < 2; ++moment) {
    const Tensor& from = moment == 0 ? local_optimizer.exp_avg() : local_optimizer.exp_avg_sq();
    float* to = nullptr;
    if (whole)
      to = (moment == 0 ? whole->exp_avg() : whole->exp_avg_sq()).mutable_values<float>().data();
    gather_each(params.all(), reinterpret_cast<const float*>(from.bytes()), group,
                [&](size_t i) { return to + whole_offset[i]; });
  }
  return whole;
}

}  // namespace sft
