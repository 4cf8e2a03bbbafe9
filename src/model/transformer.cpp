// Transformer: construction (parameters bound to layers), loading, random init, saving.
// The training step is in transformer_step.cpp, KV-cache decoding in transformer_decode.cpp.
#include "model/transformer.h"

#include <cstring>
#include <string>

#include "core/error.h"
#include "core/rng.h"
#include "model/model_dir.h"
#include "ops/ops.h"

namespace sft::model {

Transformer::Transformer(ModelConfig config)
    : config_(std::move(config)), layout_(parameter_layout(config_)), params_(layout_) {
  for (int l = 0; l < config_.num_hidden_layers; ++l)
    layers_.push_back(DecoderLayer::bind(params_, config_, l));
  embed_ = &params_.at(ParamSlot::kEmbed);
  final_norm_ = &params_.at(ParamSlot::kFinalNorm);
  const Parameter* head = params_.find(ParamSlot::kLmHead);
  lm_head_ = Linear{head ? head : embed_, nullptr};  // tied: the embedding matrix
  rope_ = rope_frequencies(config_, 0);
}

Transformer::Transformer(Transformer&&) noexcept = default;
Transformer& Transformer::operator=(Transformer&&) noexcept = default;
Transformer::~Transformer() = default;

void Transformer::set_compute_dtype(DType dtype) {
  if (dtype != DType::kF32 && dtype != DType::kBF16)
    fail("model", "compute dtype must be f32 or bf16, not " + std::string(dtype_name(dtype)));
  compute_ = dtype;
  if (dtype == DType::kBF16) params_.enable_bf16_copies();
  has_forward_ = false;
}

Transformer Transformer::load(const std::string& model_dir) {
  const ModelDir dir = open_model_dir(model_dir);
  if (dir.config.hidden_act != "silu")
    fail("model", dir.path + "/config.json: hidden_act '" + dir.config.hidden_act +
                      "' is not supported (only silu)");
  Transformer m(dir.config);
  const SafetensorsCheckpoint ckpt = SafetensorsCheckpoint::open_dir(dir.path);
  const LayoutMismatch mm = compare_with_layout(ckpt, m.layout_);
  if (!mm.ok()) {
    fail_in_file("model", {ckpt.source(), ""},
                 "weights do not match config.json:" + describe_mismatch(mm) + "\n",
                 "the checkpoint and config.json must come from the same model");
  }
  for (const Parameter& p : m.params_.all()) {
    const std::vector<float> v = ckpt.tensor(p.spec.name).to_f32_vector();
    std::memcpy(p.value.data, v.data(), v.size() * sizeof(float));
  }
  return m;
}

Transformer Transformer::random(const ModelConfig& config, uint64_t seed, float std) {
  Transformer m(config);
  for (size_t i = 0; i < m.params_.all().size(); ++i) {
    const Parameter& param = m.params_.all()[i];
    float* p = param.value.as<float>();
    const int64_t n = param.value.numel();
    if (param.spec.role == ParamRole::kNorm) {
      for (int64_t j = 0; j < n; ++j) p[j] = 1.0f;
    } else if (param.spec.role == ParamRole::kBias) {
      continue;  // zeros
    } else {
      // Element j draws words (2j, 2j+1) of stream i, so the weights do not depend on threads.
      ops::parallel_for_rows(n, 1 << 16, [&](int64_t b, int64_t e) {
        Rng rng(seed, i);
        rng.set_position(static_cast<uint64_t>(2 * b));
        for (int64_t j = b; j < e; ++j) p[j] = rng.normal() * std;
      });
    }
  }
  return m;
}

float* Transformer::param_data(const std::string& name) {
  return params_.named(name).value.as<float>();
}

float* Transformer::grad_data(const std::string& name) {
  if (!params_.has_grads()) params_.allocate_grads();
  return params_.named(name).grad.as<float>();
}

void Transformer::save(const std::string& dir, DType dtype, uint64_t max_shard_bytes) const {
  std::vector<NamedTensor> out;
  for (const NamedTensor& p : parameters()) out.push_back({p.name, p.tensor.to(dtype)});
  write_safetensors_sharded(dir, out, max_shard_bytes, {{"format", "pt"}});
}

}  // namespace sft::model
