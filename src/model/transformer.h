// Transformer: the Llama / Mistral / Qwen2 / Qwen3 decoder in fp32 on CPU, with explicit
// forward and backward per layer (no autograd), as llm.c does.
//
// Memory: parameters, gradients and activations each live in one arena; WeightViews are named
// views into the parameter (or gradient) arena under transformers' names (parameter_layout).
// A batch is a packed, padding-free stream of documents: positions restart at each document
// and attention never crosses one, so a packed batch equals its documents run alone.
//
// Loss convention (transformers'): labels are aligned with tokens and shifted here, so position
// t is scored against labels[t + 1] when t + 1 is in the same document and labels[t + 1] ≠ -100.
// forward returns (sum, count); the caller normalises. backward(scale) adds
// d(scale · loss_sum)/dθ to the gradient arena (+=, so micro-batches accumulate).
// Dimensions: T tokens, C hidden, I intermediate, H heads, Hkv kv heads, D head dim, V vocab,
// L layers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "io/safetensors.h"
#include "model/config.h"
#include "model/lm_head_loss.h"
#include "model/param_layout.h"

namespace sft::model {

// Views of one decoder layer's tensors in a parameter or gradient arena (null = absent).
struct LayerWeights {
  float* input_norm = nullptr;                 // (C)
  float *q_w = nullptr, *q_b = nullptr;        // (H·D, C), (H·D)
  float *k_w = nullptr, *k_b = nullptr;        // (Hkv·D, C), (Hkv·D)
  float *v_w = nullptr, *v_b = nullptr;        // (Hkv·D, C), (Hkv·D)
  float *o_w = nullptr, *o_b = nullptr;        // (C, H·D), (C)
  float *q_norm = nullptr, *k_norm = nullptr;  // (D) Qwen3
  float* post_norm = nullptr;                  // (C)
  float *gate_w = nullptr, *gate_b = nullptr;  // (I, C), (I)
  float *up_w = nullptr, *up_b = nullptr;      // (I, C), (I)
  float *down_w = nullptr, *down_b = nullptr;  // (C, I), (C)
};

struct WeightViews {
  float* embed = nullptr;  // (V, C)
  std::vector<LayerWeights> layers;
  float* final_norm = nullptr;  // (C)
  float* lm_head = nullptr;     // (V, C); == embed when tied
};

struct Batch {
  std::vector<int64_t> tokens;       // (T)
  std::vector<int64_t> labels;       // (T) aligned with tokens, -100 = ignored; empty = no loss
  std::vector<int64_t> doc_lengths;  // sums to T; empty = one document
};

// Per-sequence keys and values for generation.
struct KvCache {
  int64_t capacity = 0;                  // tokens
  int64_t length = 0;                    // tokens already cached
  std::vector<std::vector<float>> k, v;  // per layer (capacity, Hkv, D), after RoPE
};

// Saved activations of one decoder layer (views into the activation arena).
struct LayerActs {
  float *ln1 = nullptr, *rstd1 = nullptr;              // (T, C), (T)
  float *q_raw = nullptr, *q_rstd = nullptr;           // (T, H·D), (T·H)   before q_norm (Qwen3)
  float *k_raw = nullptr, *k_rstd = nullptr;           // (T, Hkv·D), (T·Hkv)
  float *q = nullptr, *k = nullptr, *v = nullptr;      // (T, H·D), (T, Hkv·D) ×2, after RoPE
  float* probs = nullptr;                              // Σ_docs (H, n, n)
  float* att = nullptr;                                // (T, H·D)
  float* x_mid = nullptr;                              // (T, C) residual after attention
  float *ln2 = nullptr, *rstd2 = nullptr;              // (T, C), (T)
  float *gate = nullptr, *up = nullptr, *h = nullptr;  // (T, I)
};

class Transformer {
 public:
  // Loads config.json + safetensors (any float dtype) into fp32 master weights.
  static Transformer load(const std::string& model_dir);
  // Random N(0, std) weights, norms = 1, biases = 0 (benchmarks, tests).
  static Transformer random(const ModelConfig& config, uint64_t seed, float std = 0.02f);

  const ModelConfig& config() const { return config_; }
  const std::vector<ParamSpec>& layout() const { return layout_; }
  int64_t num_parameters() const { return static_cast<int64_t>(params_.size()); }

  // Named parameter / gradient tensors (borrowed views; valid while this object lives).
  std::vector<NamedTensor> parameters() const;
  std::vector<NamedTensor> gradients() const;
  float* param_data(const std::string& name);
  float* grad_data(const std::string& name);
  void zero_grad();

  // Runs the batch; fills logits (T, V) when non-null. Saves activations for backward.
  LossStats forward(const Batch& batch, float* logits = nullptr);
  // Gradients of scale · loss_sum of the last forward, accumulated (+=) into gradients().
  void backward(float scale);

  // Keep only each layer's input and recompute the rest during backward (transformers'
  // gradient_checkpointing): activation memory of one layer instead of L, one extra forward.
  void set_gradient_checkpointing(bool on) { gradient_checkpointing_ = on; }

  // Named activations of the last forward ("layers.0.attn_norm", ...), for debug dumps
  // (with gradient checkpointing only the last layer's are kept).
  std::vector<NamedTensor> activations() const;

  // Generation: a fresh cache for up to `capacity` tokens; decode appends `n` tokens and
  // writes the logits of the last one (V).
  KvCache new_cache(int64_t capacity) const;
  void decode(const int64_t* ids, int64_t n, KvCache& cache, float* last_logits);

  // Writes the weights with HF names in `dtype` (F32, BF16, F16) as save_pretrained would.
  void save(const std::string& dir, DType dtype, uint64_t max_shard_bytes = 5'000'000'000) const;

 private:
  explicit Transformer(ModelConfig config);
  WeightViews views_into(std::vector<float>& arena) const;
  void check_batch(const Batch& batch) const;
  void prepare(const Batch& batch);
  void layer_forward(int64_t l);

  ModelConfig config_;
  std::vector<ParamSpec> layout_;
  std::vector<int64_t> offsets_;  // of each layout entry in the arenas
  std::vector<float> params_, grads_;
  WeightViews w_, g_;

  // State of the last forward.
  int64_t T_ = 0;
  std::vector<int64_t> tokens_, targets_, positions_, doc_starts_, doc_lens_, probs_offsets_;
  std::vector<float> acts_;  // activation arena
  std::vector<float> bwd_;   // backward scratch arena
  std::vector<float> cos_, sin_;
  std::vector<float> lm_workspace_;
  float* resid_ = nullptr;  // (L + 1, T, C): embedding output, then each layer's output
  float *lnf_ = nullptr, *rstdf_ = nullptr;
  std::vector<LayerActs> la_;
  bool has_forward_ = false;
  bool gradient_checkpointing_ = false;
};

}  // namespace sft::model
