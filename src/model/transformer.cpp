// Transformer: construction (parameters bound to layers), loading, random init, saving.
// The training step is in transformer_step.cpp, KV-cache decoding in transformer_decode.cpp.
#include "model/transformer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "core/error.h"
#include "core/half.h"
#include "core/rng.h"
#include "model/held_values.h"
#include "model/model_dir.h"
#include "model/moe_checkpoint.h"
#include "model/param_slices.h"
#include "model/text_model_names.h"
#include "ops/ops.h"

namespace sft::model {

Transformer::Transformer(ModelConfig config, const TensorParallel& tp)
    : Transformer(std::move(config), tp, nullptr) {}

Transformer::Transformer(ModelConfig config,
                         const std::function<ParamStorage(const ParamSpec&)>& storage)
    : Transformer(std::move(config), TensorParallel{}, &storage) {}

Transformer::Transformer(ModelConfig config, const TensorParallel& tp,
                         const std::function<ParamStorage(const ParamSpec&)>* storage)
    : config_(std::move(config)),
      tp_(tp),
      layout_(parameter_layout(config_, tp.rank, tp.size)),
      params_(storage ? ParameterSet(layout_, *storage) : ParameterSet(layout_)) {
  bind_layers();
  rope_ = rope_frequencies(config_, 0);
  if (config_.sliding_rope) {
    sliding_config_ = config_;
    sliding_config_.rope = *config_.sliding_rope;
    rope_sliding_ = rope_frequencies(sliding_config_, 0);
  }
  embed_scale_ = static_cast<float>(config_.embedding_multiplier);
  if (config_.embedding_scale_sqrt_hidden) {
    // transformers: torch.tensor(hidden_size ** 0.5) (fp32), cast to the embedding weight's
    // dtype: the checkpoint's, as from_pretrained loads it (bf16 turns sqrt(2560) into 50.5).
    float s = static_cast<float>(std::sqrt(static_cast<double>(config_.hidden_size)));
    if (config_.dtype == DType::kBF16) s = bf16_to_f32(f32_to_bf16(s));
    if (config_.dtype == DType::kF16) s = f16_to_f32(f32_to_f16(s));
    embed_scale_ *= s;
  }
}

void Transformer::bind_layers() {
  layers_.clear();
  norm_weight_scratch_ = Arena(params_.device());
  if (config_.norm_weight_offset != 0)
    norm_weight_scratch_.reserve(
        static_cast<size_t>(std::max(config_.hidden_size, config_.head_dim)) * sizeof(float));
  const ops::View norm_scratch = norm_weight_view();
  for (int l = 0; l < config_.num_hidden_layers; ++l)
    layers_.push_back(DecoderLayer::bind(params_, config_, l, tp_, norm_scratch));
  embed_ = &params_.at(ParamSlot::kEmbed);
  vocab_shard_ = {embed_->spec.tp_begin, tp_.group, config_.vocab_size};
  final_norm_ = &params_.at(ParamSlot::kFinalNorm);
  const Parameter* head = params_.find(ParamSlot::kLmHead);
  lm_head_ = Linear{head ? head : embed_, nullptr};  // tied: the embedding matrix
}

ops::View Transformer::norm_weight_view() const {
  if (config_.norm_weight_offset == 0) return {};
  const int64_t n = std::max(config_.hidden_size, config_.head_dim);
  return ops::view_of(reinterpret_cast<float*>(norm_weight_scratch_.data()), 1, n,
                      norm_weight_scratch_.device());
}

void Transformer::to_device(Device device) {
  if (device == params_.device()) return;
  if (params_.has_4bit())
    fail("model", std::string("a 4-bit (QLoRA) base is not on the ") +
                      (device == Device::kCuda ? "CUDA" : device_name(device)) +
                      " device yet (hint: --use_cpu)");
  if (params_.fp32_released())
    fail("model", std::string("to_device(") + device_name(device) +
                      "): the fp32 matrices were released (keep_frozen_base_in_bf16)");
  ParameterSet moved = params_.copy_on(device);
  if (lora_) lora_->to_device(params_, moved);  // while the old base is alive to map from
  params_ = std::move(moved);
  bind_layers();
  if (lora_) bind_lora();
  acts_ = Arena(device);
  bwd_ = Arena(device);
  decode_ = Arena(device);
  staging_ = device == Device::kCpu ? Arena() : Arena(pinned_host_allocator());
  has_forward_ = false;
}

RmsNormBlock Transformer::final_norm() const {
  return {final_norm_, config_.rms_norm_eps, static_cast<float>(config_.norm_weight_offset),
          norm_weight_view()};
}

Transformer::Transformer(Transformer&&) noexcept = default;
Transformer& Transformer::operator=(Transformer&&) noexcept = default;
Transformer::~Transformer() = default;

void Transformer::enable_expert_parallel(ExpertGroup& group) {
  ep_ = std::make_unique<ExpertParallel>(group, config_.num_experts, config_.num_hidden_layers);
  set_expert_exchange(true);
}

void Transformer::set_expert_exchange(bool on) {
  ep_on_ = on && ep_;
  for (size_t l = 0; l < layers_.size(); ++l) {
    layers_[l].moe.ep = ep_on_ ? ep_.get() : nullptr;
    layers_[l].moe.layer = static_cast<int64_t>(l);
  }
}

void Transformer::set_compute_dtype(DType dtype) {
  if (dtype != DType::kF32 && dtype != DType::kBF16)
    fail("model", "compute dtype must be f32 or bf16, not " + std::string(dtype_name(dtype)));
  if (dtype != DType::kBF16 && params_.fp32_released())
    fail("model", "fp32 compute after keep_frozen_base_in_bf16 (the base has only bf16 matrices)");
  compute_ = dtype;
  if (dtype == DType::kBF16) params_.enable_bf16_copies();
  if (dtype == DType::kBF16 && lora_) lora_->params().enable_bf16_copies();
  has_forward_ = false;
}

LoraModel& Transformer::enable_lora(const LoraConfig& config, uint64_t seed,
                                    const std::string& what) {
  if (lora_) fail("model", "LoRA is already enabled on this model");
  if (tp_.on())
    fail("model", what + ": LoRA adapters with tensor parallelism are not supported " +
                      "(hint: --tp_size 1; data parallelism splits the batch instead)");
  // The adapters' init and the modules_to_save copies are made from host memory.
  if (params_.device() != Device::kCpu)
    fail("model", what + ": enable LoRA before moving the model to the " +
                      device_name(params_.device()) + " device (to_device moves the adapters too)");
  lora_ = std::make_unique<LoraModel>(params_, config_, config, seed, what);
  bind_lora();
  if (params_.has_grads())
    fail("model", "enable_lora on a model that already has gradients (enable it before training)");
  if (compute_ == DType::kBF16) lora_->params().enable_bf16_copies();
  has_forward_ = false;
  return *lora_;
}

void Transformer::bind_lora() {
  // Adapters sit on the base weights; modules_to_save copies then take their base's place.
  auto swap = [&](const Parameter*& p) {
    if (!p) return;
    if (const Parameter* copy = lora_->saved_copy_of(p)) p = copy;
  };
  auto bind = [&](Linear& lin) {
    lin.lora = lora_->adapter_for(lin.weight);
    swap(lin.weight);
    swap(lin.bias);
  };
  for (DecoderLayer& d : layers_) {
    for (Linear* lin : d.linears()) bind(*lin);
    for (const Parameter** norm : d.norm_weights()) swap(*norm);
    for (ExpertStack* stack : {&d.moe.gate_up, &d.moe.down})
      stack->lora = lora_->expert_adapter_for(stack->base);
  }
  swap(embed_);
  swap(final_norm_);
  swap(lm_head_.weight);
}

void Transformer::keep_frozen_base_in_bf16(const FrozenBaseForm& form) {
  if (!lora_) fail("model", "keep_frozen_base_in_bf16 needs LoRA adapters");
  // An adapted expert stack keeps fp32 values too: W + delta is formed in fp32
  // (model/expert_lora.h).
  const LoraModel& lora = *lora_;
  params_.release_fp32_matrices([&](const ParamSpec& spec) {
    if (form.keeps_fp32(spec)) return true;
    for (const ExpertLoraAdapter& ad : lora.expert_adapters())
      if (ad.base->spec.name == spec.name) return true;
    return false;
  });
  set_compute_dtype(DType::kBF16);  // the base's copies exist now: the adapters' are made
}

void Transformer::merge_lora() {
  if (!lora_) return;
  if (params_.device() != Device::kCpu)
    fail("model", std::string("merging LoRA adapters on the ") + device_name(params_.device()) +
                      " device (hint: to_device(Device::kCpu) first)");
  for (DecoderLayer& d : layers_) {
    for (Linear* lin : d.linears()) {
      if (!lin->lora) continue;
      const Parameter* base = lora_->base_of(lin->lora);  // a fused tensor's part: its rows
      std::vector<float> merged(static_cast<size_t>(base->value.numel()));
      lin->merged_weight(ops::view_of(merged.data(), base->value.rows, base->value.cols));
      std::memcpy(base->value.data, merged.data(), merged.size() * sizeof(float));
      lin->lora = nullptr;
    }
  }
  for (DecoderLayer& d : layers_)
    for (ExpertStack* stack : {&d.moe.gate_up, &d.moe.down}) {
      if (!stack->lora) continue;
      const ops::View merged = stack->lora->materialize(DType::kF32);  // as the forward forms it
      std::memcpy(stack->base->value.data, merged.data,
                  static_cast<size_t>(merged.numel()) * sizeof(float));
      stack->lora = nullptr;
    }
  // The trained copies go back into the base, and the layers point at the base again.
  for (const auto& [base, copy] : lora_->saved())
    std::memcpy(base->value.data, copy->value.data,
                static_cast<size_t>(base->value.numel()) * sizeof(float));
  auto unswap = [&](const Parameter*& p) {
    for (const auto& [base, copy] : lora_->saved())
      if (p == copy) p = base;
  };
  for (DecoderLayer& d : layers_) {
    for (Linear* lin : d.linears()) {
      unswap(lin->weight);
      unswap(lin->bias);
    }
    for (const Parameter** norm : d.norm_weights()) unswap(*norm);
  }
  unswap(embed_);
  unswap(final_norm_);
  unswap(lm_head_.weight);
  lora_.reset();
  if (params_.has_bf16_copies()) params_.refresh_bf16_copies();
  has_forward_ = false;
}

Transformer Transformer::load(const std::string& model_dir, const TensorParallel& tp,
                              ArenaShard shard) {
  const ModelDir dir = open_model_dir(model_dir);
  if (tp.on()) check_tensor_parallel(dir.config, tp.size, dir.path + "/config.json");
  Transformer m(dir.config, tp);
  if (!shard.whole()) m.params_.hold_only(shard.of(m.params_.numel()));
  // A multimodal Gemma 3 folder's text model is read under the text model's own names.
  SafetensorsCheckpoint stored = SafetensorsCheckpoint::open_dir(dir.path);
  const TextModelNames names = text_model_names(stored);
  // Experts are stored in their family's form on disk and stacked here (moe_checkpoint.h).
  const SafetensorsCheckpoint ckpt =
      experts_view(text_model_view(std::move(stored), names), m.config_);
  const LayoutMismatch mm =
      compare_with_layout(ckpt, checkpoint_layout(parameter_layout(m.config_), ckpt, m.config_));
  if (!mm.ok()) {
    fail_in_file("model", {ckpt.source(), ""},
                 "weights do not match config.json:" + describe_mismatch(mm) + "\n",
                 "the checkpoint and config.json must come from the same model");
  }
  if (m.config_.has_experts())
    load_checkpoint_parameters(ckpt, m.params_, m.config_);
  else
    load_parameter_slices(ckpt, m.params_);
  return m;
}

Transformer Transformer::zeros(const ModelConfig& config, const TensorParallel& tp) {
  Transformer m(config, tp);
  std::span<float> v = m.params_.values();
  std::fill(v.begin(), v.end(), 0.0f);
  return m;
}

namespace {

// dst[k] = N(0, std) drawn from words (2j, 2j + 1) of stream `stream` for j = first + k: the
// element's index in the whole tensor, so a tensor-parallel slice holds the unsplit values.
void fill_normal(float* dst, int64_t first, int64_t n, uint64_t seed, uint64_t stream, float std) {
  ops::parallel_for_rows(n, 1 << 16, [&](int64_t b, int64_t e) {
    Rng rng(seed, stream);
    rng.set_position(static_cast<uint64_t>(2 * (first + b)));
    for (int64_t j = b; j < e; ++j) dst[j] = rng.normal() * std;
  });
}

}  // namespace

Transformer Transformer::random(const ModelConfig& config, uint64_t seed, float std,
                                const TensorParallel& tp, ArenaShard shard) {
  if (tp.on()) check_tensor_parallel(config, tp.size, "random initialisation");
  Transformer m(config, tp);
  if (!shard.whole()) m.params_.hold_only(shard.of(m.params_.numel()));
  // A tensor-parallel slice: whole, into a scratch when partly held (element j's numbers
  // depend on j alone, so any part could be drawn alone; the slices' layout makes it simpler).
  const PartWriter slice = through_scratch([&](size_t i, const Parameter& param, float* p) {
    if (param.spec.role == ParamRole::kNorm) {
      std::fill_n(p, param.value.numel(), 1.0f);
    } else if (param.spec.role == ParamRole::kBias) {
      return;  // zeros
    } else if (param.spec.tp_dim == 1 && param.spec.shape.size() == 2) {
      // Column blocks: one run per row of the whole matrix.
      const int64_t rows = param.spec.shape[0], cols = param.spec.shape[1];
      const int64_t full_cols = param.spec.full_shape[1];
      for (int64_t r = 0; r < rows; ++r)
        fill_normal(p + r * cols, r * full_cols + param.spec.tp_begin, param.spec.tp_real(), seed,
                    i, std);
    } else {
      // A block of rows: one run from the block's first element. A padded block's rows past
      // the whole tensor stay zero (the arena starts zero-filled).
      const int64_t row = param.spec.shape.size() == 2 ? param.spec.shape[1] : 1;
      fill_normal(p, param.spec.tp_begin * row, param.spec.tp_real() * row, seed, i, std);
    }
  });
  write_held_values(m.params_, [&](size_t i, const Parameter& param, ElementRun part, float* p) {
    if (param.spec.tp_dim >= 0) return slice(i, param, part, p);
    // Unsplit: the held elements' own numbers, nothing else drawn.
    if (param.spec.role == ParamRole::kNorm)
      std::fill_n(p, part.size(), 1.0f);
    else if (param.spec.role != ParamRole::kBias)
      fill_normal(p, part.begin, part.size(), seed, i, std);
  });
  return m;
}

std::vector<NamedTensor> Transformer::parameters() const {
  return checkpoint_tensors(params_, config_);
}

std::vector<NamedTensor> Transformer::gradients() const {
  std::vector<NamedTensor> out = trainable().named_grads();  // in all()'s order
  for (size_t i = 0; i < out.size(); ++i) {
    const Parameter& p = trainable().all()[i];
    if (converted_on_disk(p.spec, config_))
      out[i].tensor = on_disk_form(p.spec, p.grad.as<float>());
  }
  return out;
}

std::vector<const Parameter*> Transformer::converted_parameters() const {
  return converted_sources(params_, config_);
}

float* Transformer::param_data(const std::string& name) {
  return params_.named(name).value.as<float>();
}

float* Transformer::grad_data(const std::string& name) {
  if (!trainable().has_grads()) trainable().allocate_grads();
  return trainable().named(name).grad.as<float>();
}

void Transformer::save(const std::string& dir, DType dtype, uint64_t max_shard_bytes) const {
  std::vector<NamedTensor> out;
  for (const NamedTensor& p : parameters()) out.push_back({p.name, p.tensor.to(dtype)});
  write_safetensors_sharded(dir, out, max_shard_bytes, {{"format", "pt"}});
}

}  // namespace sft::model
