// Transformer: parameter arena, loading/saving, and the packed training forward/backward.
// Generation (KV cache decode) is in transformer_decode.cpp. See transformer.h.
#include "model/transformer.h"

#include <cstring>
#include <map>

#include "core/error.h"
#include "core/rng.h"
#include "model/attention.h"
#include "model/embedding.h"
#include "model/linear.h"
#include "model/mlp.h"
#include "model/model_dir.h"
#include "model/rmsnorm.h"
#include "model/rope.h"
#include "ops/ops.h"

namespace sft::model {

Transformer::Transformer(ModelConfig config)
    : config_(std::move(config)), layout_(parameter_layout(config_)) {
  int64_t total = 0;
  for (const ParamSpec& p : layout_) {
    offsets_.push_back(total);
    total += shape_numel(p.shape);
  }
  params_.assign(static_cast<size_t>(total), 0.0f);
  w_ = views_into(params_);
}

WeightViews Transformer::views_into(std::vector<float>& arena) const {
  WeightViews v;
  v.layers.resize(static_cast<size_t>(config_.num_hidden_layers));
  for (size_t i = 0; i < layout_.size(); ++i) {
    const std::string& name = layout_[i].name;
    float* p = arena.data() + offsets_[i];
    if (name == "model.embed_tokens.weight") {
      v.embed = p;
    } else if (name == "model.norm.weight") {
      v.final_norm = p;
    } else if (name == "lm_head.weight") {
      v.lm_head = p;
    } else {
      LayerWeights& L = v.layers.at(static_cast<size_t>(layout_[i].layer));
      const std::string leaf = name.substr(name.find('.', std::string("model.layers.").size()) + 1);
      static const std::map<std::string, float* LayerWeights::*> slots = {
          {"input_layernorm.weight", &LayerWeights::input_norm},
          {"self_attn.q_proj.weight", &LayerWeights::q_w},
          {"self_attn.q_proj.bias", &LayerWeights::q_b},
          {"self_attn.k_proj.weight", &LayerWeights::k_w},
          {"self_attn.k_proj.bias", &LayerWeights::k_b},
          {"self_attn.v_proj.weight", &LayerWeights::v_w},
          {"self_attn.v_proj.bias", &LayerWeights::v_b},
          {"self_attn.o_proj.weight", &LayerWeights::o_w},
          {"self_attn.o_proj.bias", &LayerWeights::o_b},
          {"self_attn.q_norm.weight", &LayerWeights::q_norm},
          {"self_attn.k_norm.weight", &LayerWeights::k_norm},
          {"post_attention_layernorm.weight", &LayerWeights::post_norm},
          {"mlp.gate_proj.weight", &LayerWeights::gate_w},
          {"mlp.gate_proj.bias", &LayerWeights::gate_b},
          {"mlp.up_proj.weight", &LayerWeights::up_w},
          {"mlp.up_proj.bias", &LayerWeights::up_b},
          {"mlp.down_proj.weight", &LayerWeights::down_w},
          {"mlp.down_proj.bias", &LayerWeights::down_b},
      };
      auto it = slots.find(leaf);
      if (it == slots.end()) fail("model", "no slot for parameter '" + name + "'");
      L.*(it->second) = p;
    }
  }
  if (!v.lm_head) v.lm_head = v.embed;  // tied
  return v;
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
    std::string what;
    for (const auto& s : mm.missing) what += " missing " + s + ";";
    for (const auto& s : mm.unexpected) what += " unexpected " + s + ";";
    for (const auto& s : mm.wrong_shape) what += " wrong shape " + s + ";";
    fail_in_file("model", {ckpt.source(), ""}, "weights do not match config.json:" + what,
                 "the checkpoint and config.json must come from the same model");
  }
  for (size_t i = 0; i < m.layout_.size(); ++i) {
    const std::vector<float> v = ckpt.tensor(m.layout_[i].name).to_f32_vector();
    std::memcpy(m.params_.data() + m.offsets_[i], v.data(), v.size() * sizeof(float));
  }
  return m;
}

Transformer Transformer::random(const ModelConfig& config, uint64_t seed, float std) {
  Transformer m(config);
  for (size_t i = 0; i < m.layout_.size(); ++i) {
    float* p = m.params_.data() + m.offsets_[i];
    const int64_t n = shape_numel(m.layout_[i].shape);
    const std::string& name = m.layout_[i].name;
    if (m.layout_[i].role == ParamRole::kNorm) {
      for (int64_t j = 0; j < n; ++j) p[j] = 1.0f;
    } else if (name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0) {
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

std::vector<NamedTensor> Transformer::parameters() const {
  std::vector<NamedTensor> out;
  for (size_t i = 0; i < layout_.size(); ++i)
    out.push_back({layout_[i].name, Tensor::borrow(DType::kF32, layout_[i].shape,
                                                   params_.data() + offsets_[i], nullptr)});
  return out;
}

std::vector<NamedTensor> Transformer::gradients() const {
  std::vector<NamedTensor> out;
  if (grads_.empty()) return out;
  for (size_t i = 0; i < layout_.size(); ++i)
    out.push_back({layout_[i].name, Tensor::borrow(DType::kF32, layout_[i].shape,
                                                   grads_.data() + offsets_[i], nullptr)});
  return out;
}

float* Transformer::param_data(const std::string& name) {
  for (size_t i = 0; i < layout_.size(); ++i)
    if (layout_[i].name == name) return params_.data() + offsets_[i];
  fail("model", "no parameter named '" + name + "'");
}

float* Transformer::grad_data(const std::string& name) {
  if (grads_.empty()) zero_grad();
  for (size_t i = 0; i < layout_.size(); ++i)
    if (layout_[i].name == name) return grads_.data() + offsets_[i];
  fail("model", "no parameter named '" + name + "'");
}

void Transformer::zero_grad() {
  if (grads_.size() != params_.size()) {
    grads_.assign(params_.size(), 0.0f);
    g_ = views_into(grads_);
  } else {
    std::memset(grads_.data(), 0, grads_.size() * sizeof(float));
  }
}

void Transformer::save(const std::string& dir, DType dtype, uint64_t max_shard_bytes) const {
  std::vector<NamedTensor> out;
  for (const NamedTensor& p : parameters()) out.push_back({p.name, p.tensor.to(dtype)});
  write_safetensors_sharded(dir, out, max_shard_bytes, {{"format", "pt"}});
}

}  // namespace sft::model
