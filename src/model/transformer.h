// Transformer: the Llama / Mistral / Qwen2 / Qwen3 decoder with explicit forward and backward
// per layer (no autograd), as llm.c does: embedding, DecoderLayer × L, final norm, and the LM
// head fused with its cross-entropy. Compute is fp32 (the spec) or bf16 (set_compute_dtype:
// bf16 matmul inputs and weight copies, fp32 master weights, gradients and residual stream).
//
// Memory: parameters and gradients live in the ParameterSet's arenas, activations and
// backward scratch in two more arenas carved per batch shape (grown, never shrunk, so the step
// loop stops allocating once the longest batch has been seen).
// A batch is a packed, padding-free stream of documents: positions restart at each document
// and attention never crosses one, so a packed batch equals its documents run alone.
//
// Loss convention (transformers'): labels are aligned with tokens and shifted here, so position
// t is scored against labels[t + 1] when t + 1 is in the same document and labels[t + 1] ≠ -100.
// forward returns (sum, count); the caller normalises. backward(scale) adds
// d(scale · loss_sum)/dθ to the gradient arena (+=, so micro-batches accumulate). Given the
// scale already in forward, the LM head produces its gradient in that pass (the fused head:
// logits are computed once per step).
// Dimensions: T tokens, C hidden, I intermediate, H heads, Hkv kv heads, D head dim, V vocab,
// L layers.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <optional>

#include "core/arena.h"
#include "core/tensor.h"
#include "io/safetensors.h"
#include "model/config.h"
#include "model/decoder_layer.h"
#include "model/expert_parallel.h"
#include "model/frozen_base.h"
#include "model/lora.h"
#include "model/param_layout.h"
#include "model/parameters.h"
#include "model/quant4_plan.h"
#include "model/rope.h"
#include "model/tensor_parallel.h"
#include "ops/ops.h"

namespace sft::model {

using LossStats = ops::LmHeadStats;

struct Batch {
  std::vector<int64_t> tokens;       // (T)
  std::vector<int64_t> labels;       // (T) aligned with tokens, -100 = ignored; empty = no loss
  std::vector<int64_t> doc_lengths;  // sums to T; empty = one document
  // (T) 1 where the token is padding (TRL's attention_mask 0: a padded row's tail), empty = no
  // padding. Causal attention already keeps pads out of every real token; the mixture of
  // experts' load-balancing loss leaves them out of its counts as transformers does.
  std::vector<uint8_t> padding = {};
};

// Per-sequence keys and values for generation, on the model's device (Transformer::new_cache).
struct KvCache {
  int64_t capacity = 0;        // tokens
  int64_t length = 0;          // tokens already cached
  int64_t layer_elements = 0;  // capacity · Hkv · D
  Arena k, v;                  // each layer's (capacity, Hkv, D) after RoPE, layer after layer
  float* k_of(int64_t layer) { return reinterpret_cast<float*>(k.data()) + layer * layer_elements; }
  float* v_of(int64_t layer) { return reinterpret_cast<float*>(v.data()) + layer * layer_elements; }
};

class Transformer {
 public:
  // Loads config.json + safetensors (any float dtype) into fp32 master weights. With tensor
  // parallelism (tensor_parallel.h) each rank reads only its slices of the files. With a
  // `shard` (ZeRO-3's, ParameterSet::hold_only) only that share of the flat arena is read;
  // the rest stays zero, untouched, until the trainer gathers it.
  static Transformer load(const std::string& model_dir, const TensorParallel& tp = {},
                          ArenaShard shard = {});
  // Random N(0, std) weights, norms = 1, biases = 0 (benchmarks, tests). Element j of a
  // tensor draws the same numbers whatever the tensor-parallel split or ZeRO-3 `shard`, so a
  // split model holds slices of the unsplit one and a shard its share of the whole.
  static Transformer random(const ModelConfig& config, uint64_t seed, float std = 0.02f,
                            const TensorParallel& tp = {}, ArenaShard shard = {});
  // QLoRA (model/quant4_load.cpp): the decoder layers' Linear weights held in bitsandbytes'
  // 4-bit format, never whole in fp32: a bitsandbytes checkpoint's 4-bit groups as stored, any
  // other weight `plan` selects quantized at load one tensor at a time. No tensor parallelism.
  // With a bf16 `form` (model/frozen_base.h) the matrices it holds in bf16 are read a block of
  // rows at a time straight into bf16, and the model computes in bf16 (set_compute_dtype).
  static Transformer load_4bit(const std::string& model_dir, const Quant4Plan& plan,
                               const FrozenBaseForm& form = {});
  // random() drawing the same values, each 4-bit weight quantized as it is drawn, each matrix
  // `form` holds in bf16 rounded as it is drawn.
  static Transformer random_4bit(const ModelConfig& config, uint64_t seed, float std,
                                 const Quant4Plan& plan, const FrozenBaseForm& form = {});
  // All weights zero (the destination of a gather).
  static Transformer zeros(const ModelConfig& config, const TensorParallel& tp = {});

  Transformer(Transformer&&) noexcept;
  Transformer& operator=(Transformer&&) noexcept;
  ~Transformer();

  const ModelConfig& config() const { return config_; }
  // Moves the parameters (their fp32 values copied over) and the activation arenas onto
  // `device` (Device::kCpu brings a device model back, e.g. for the export); the step then
  // runs there, batches and logits staying host data (copied in and out). Gradients, if any,
  // start again at zero there and the bf16 copies are remade from the moved values. LoRA
  // adapters move with the model (enable_lora comes first: it reads the base on the host).
  void to_device(Device device);
  Device device() const { return params_.device(); }
  // This rank's parameters (slices under tensor parallelism; spec.full_shape is the whole).
  const std::vector<ParamSpec>& layout() const { return layout_; }
  const TensorParallel& tensor_parallel() const { return tp_; }
  // Expert parallelism (expert_parallel.h): this rank's expert layers exchange rows with
  // `group`, each running only its share of the experts. set_expert_exchange(false) pauses it
  // (every rank then runs every expert on its own rows: the whole experts must be there, e.g.
  // gathered for an evaluation), true resumes it.
  void enable_expert_parallel(ExpertGroup& group);
  void set_expert_exchange(bool on);
  const ExpertParallel* expert_parallel() const { return ep_.get(); }
  bool expert_exchange_on() const { return ep_ && ep_on_; }
  // The model's own (base) parameters; with LoRA they are frozen: no gradients.
  ParameterSet& params() { return params_; }
  const ParameterSet& params() const { return params_; }
  // What training updates: the base parameters, or with LoRA the adapters (+ modules_to_save
  // copies). Gradients, optimizer state and checkpoints' moments follow this set.
  ParameterSet& trainable() { return lora_ ? lora_->params() : params_; }
  const ParameterSet& trainable() const { return lora_ ? lora_->params() : params_; }

  // LoRA: adapters on the targeted projections (lora.h), bound into the layers' Linears;
  // modules_to_save copies replace their base parameters in the computation. `what` names
  // the flag or file for error messages. Returns the adapters (A and B to be overwritten by a
  // loaded adapter, if any, before training).
  LoraModel& enable_lora(const LoraConfig& config, uint64_t seed, const std::string& what);
  LoraModel* lora() { return lora_.get(); }
  const LoraModel* lora() const { return lora_.get(); }
  // The dropout mask key of the next training forward (the trainer sets it per micro-batch so
  // that a resumed run draws the same masks).
  void set_lora_dropout_key(uint64_t key) {
    if (lora_) lora_->set_dropout_key(key);
  }
  // merge_and_unload(): W += scale · B A for every adapter, modules_to_save copies written
  // back into the base; LoRA is then off. On the host only (a device model moves back first).
  void merge_lora();
  // LoRA under bf16 compute (set here): the frozen base then keeps only the bf16 form of its
  // matrices (4 bytes less per base parameter), each fp32 matrix released as its copy is
  // written when there are no copies yet; what `form` keeps in fp32 (the norms, and the
  // embedding table when the reference looks it up in fp32: model/frozen_base.h) stays.
  // Afterwards parameters() fails (nothing exports or merges from this model).
  void keep_frozen_base_in_bf16(const FrozenBaseForm& form = FrozenBaseForm::bf16(DType::kF32));
  // The whole model's (not a tensor-parallel slice's), as transformers counts them.
  int64_t num_parameters() const {
    return tp_.on() ? count_parameters(parameter_layout(config_)).total : params_.numel();
  }

  // Named parameter / gradient tensors (borrowed views; valid while this object lives).
  // parameters() are as save_pretrained writes them (a mixture of experts' experts one by one,
  // model/moe_checkpoint.h); gradients() as transformers' named_parameters (stacked experts;
  // gpt-oss's transposed as transformers holds them: owned copies).
  std::vector<NamedTensor> parameters() const;
  // For each of parameters()' tensors, in order, the parameter it is a converted copy of
  // (gpt-oss's transposed experts: model::on_disk_form of that parameter's values, which a
  // sharded export makes again from the gathered whole values), or null: a view of the arena.
  std::vector<const Parameter*> converted_parameters() const;
  std::vector<NamedTensor> gradients() const;
  float* param_data(const std::string& name);
  float* grad_data(const std::string& name);
  void zero_grad() { trainable().zero_grads(); }

  // kF32 (default) or kBF16. bf16 allocates the weights' bf16 copies; call
  // params().refresh_bf16_copies() after changing the master weights.
  void set_compute_dtype(DType dtype);
  DType compute_dtype() const { return compute_; }

  // Runs the batch; fills logits (T, V) when non-null. Saves activations for backward. With
  // loss_scale, the LM head's gradient of loss_scale · loss_sum is produced in this pass.
  LossStats forward(const Batch& batch, float* logits = nullptr,
                    std::optional<double> loss_scale = std::nullopt);
  // Gradients of scale · loss_sum of the last forward, accumulated (+=) into gradients().
  void backward(double scale);

  // NEFTune (transformers' neftune_post_forward_hook, training only): the next forward adds
  // noise uniform in [-magnitude, magnitude] to the embedding output, magnitude = alpha /
  // sqrt(L * hidden) for sequences of L tokens. Element j of the (T, hidden) output draws word j
  // of Philox stream (seed, stream) (ops::add_uniform_noise, on the model's device), so the
  // noise depends on neither the device, the threads nor a resume.
  // Applies to one forward only; evaluation never arms it.
  void arm_embedding_noise(double magnitude, uint64_t seed, uint64_t stream) {
    noise_ = {magnitude, seed, stream};
  }

  // Around each decoder layer's pass (layer index given), for sharded data parallelism
  // (ZeRO-2 reduces a layer's gradients as soon as its backward is done; ZeRO-3 gathers its
  // weights before and frees them after). before_backward comes before gradient
  // checkpointing's recomputation. Around the forward's embedding lookup and the LM head +
  // loss (in the forward, or in the backward when the forward had no loss scale): ZeRO-3
  // gathers those tables there. The embedding's backward reads no weights: no hook. Empty
  // functions are not called.
  struct LayerHooks {
    std::function<void(int64_t)> before_forward, after_forward, before_backward, after_backward;
    // before_embedding gets the ids the lookup reads (ZeRO-3 fetches only those rows).
    std::function<void(std::span<const int64_t> ids)> before_embedding;
    std::function<void()> after_embedding, before_head, after_head;
    // The LM head's weight a vocabulary block at a time from here, when set (ZeRO-3's head:
    // ops/lm_head_blocks.h).
    ops::LmHeadWeightBlocks* head_blocks = nullptr;
  };
  void set_layer_hooks(LayerHooks hooks) { hooks_ = std::move(hooks); }
  // Mixture of experts: the load-balancing loss of the last forward (transformers'
  // load_balancing_loss_func over every expert layer's router and the batch's tokens, padding
  // excluded; unweighted), 0 without experts. backward adds the gradient of weight · that loss
  // (TRL: router_aux_loss_coef, over the gradient-accumulation steps); 0 (the default) = none.
  double router_aux_loss() const { return router_aux_loss_; }
  void set_router_aux_loss_weight(double weight) { aux_weight_ = weight; }

  // Keep only each layer's input and recompute the rest during backward (transformers'
  // gradient_checkpointing): activation memory of one layer instead of L, one extra forward.
  void set_gradient_checkpointing(bool on) { gradient_checkpointing_ = on; }
  // With gradient checkpointing, keep each pre-norm dense layer's gate and up products as well
  // (2·T·I values a layer in the compute dtype) so that backward recomputes neither: the same
  // bits, about a third of the recomputation's FLOPs saved for that memory (Megatron's and
  // torchtitan's selective recomputation keep matmul outputs the same way).
  void set_checkpoint_keeps_mlp(bool on) { checkpoint_keeps_mlp_ = on; }

  // Named activations of the last forward ("layers.0.attn_norm", ...), for debug dumps
  // (with gradient checkpointing only the last layer's are kept). A layer with experts adds
  // its routing: "router_probs" (T, E) f32 and "experts" (T, k) i64, highest weight first.
  std::vector<NamedTensor> activations() const;
  // Bytes of the activations the last forward saved for backward (its one-layer scratch, which
  // backward does not read, not counted).
  size_t activation_bytes() const { return acts_bytes_; }
  // Arena growths so far (the step loop must stop allocating: tests count these).
  int64_t arena_allocations() const { return acts_.allocations() + bwd_.allocations(); }

  // Generation: a fresh cache for up to `capacity` tokens; decode appends `n` tokens and
  // writes the logits of the last one (V).
  KvCache new_cache(int64_t capacity) const;
  void decode(const int64_t* ids, int64_t n, KvCache& cache, float* last_logits);

  // Writes the weights with HF names in `dtype` (F32, BF16, F16) as save_pretrained would.
  void save(const std::string& dir, DType dtype, uint64_t max_shard_bytes = 5'000'000'000) const;

 private:
  Transformer(ModelConfig config, const TensorParallel& tp);
  // QLoRA: each parameter held as `storage` says (ParameterSet's QLoRA constructor).
  Transformer(ModelConfig config, const std::function<ParamStorage(const ParamSpec&)>& storage);
  Transformer(ModelConfig config, const TensorParallel& tp,
              const std::function<ParamStorage(const ParamSpec&)>* storage);
  // What lookups read: the fp32 table, or the bf16 one when the table is held in bf16.
  ops::View embedding_table() const { return embed_->value.empty() ? embed_->bf16 : embed_->value; }
  // Points the layers, the embedding, the final norm and the LM head at params_.
  void bind_layers();
  // Points the layers' Linears at their adapters and modules_to_save copies (after bind_layers).
  void bind_lora();
  void check_batch(const Batch& batch) const;
  void prepare(const Batch& batch, bool logits);
  void layer_forward(int64_t l);
  AttentionInputs attention_inputs(int64_t l) const;
  // inv_freq for a document of n tokens: computed once, except for dynamic scaling past the
  // trained context, which depends on n.
  // `set`: the layer's rope parameter set (ModelConfig::layer_rope_set; 1 = Gemma 3's sliding
  // layers, whose rope has its own theta and scaling).
  const RopeFrequencies& rope_for(int64_t n, int set = 0);
  int rope_set_of(int64_t layer) const;
  // The tables of `positions` for each rope set (`cos[1]` only with a second set).
  void fill_rope_tables(const ops::View (&cos)[2], const ops::View (&sin)[2],
                        const int64_t* positions, int64_t n, int64_t rope_n);
  // The fused LM head over the batch's rows (not the padding), with or without its gradient.
  LossStats head(float* logits, double scale, bool train);

  ModelConfig config_;
  LayerHooks hooks_;
  TensorParallel tp_;
  std::vector<ParamSpec> layout_;
  ParameterSet params_;
  std::vector<DecoderLayer> layers_;
  std::unique_ptr<LoraModel> lora_;
  std::unique_ptr<ExpertParallel> ep_;  // null without expert parallelism
  bool ep_on_ = false;                  // the layers exchange rows (set_expert_exchange)
  Linear lm_head_;
  const Parameter* embed_ = nullptr;
  ops::VocabShard vocab_shard_;  // the embedding's (and LM head's) vocabulary rows
  const Parameter* final_norm_ = nullptr;
  // (1 + w) norms' weight, written before each norm's use (blocks/norm_block.h): max(C, D)
  // floats on the model's device, allocated with the model; empty for plain norms.
  Arena norm_weight_scratch_;
  ops::View norm_weight_view() const;
  RmsNormBlock final_norm() const;
  DType compute_ = DType::kF32;
  struct EmbeddingNoise {
    double magnitude = 0;
    uint64_t seed = 0, stream = 0;
  } noise_;
  void add_embedding_noise(int64_t T);
  bool gradient_checkpointing_ = false;
  bool checkpoint_keeps_mlp_ = false;
  // Whether the forward keeps layer l's gate and up products (checkpointing that keeps them; a
  // pre-norm dense layer).
  bool mlp_kept(size_t l) const {
    return gradient_checkpointing_ && checkpoint_keeps_mlp_ &&
           !layers_[l].plan.backward_reads_mlp_output();
  }

  // State of the last forward (views into acts_; host vectors reuse their capacity).
  int64_t T_ = 0, T_real_ = 0;  // tokens in the arenas (padded under bf16), tokens of the batch
  std::vector<int64_t> tokens_, targets_, positions_;
  // tokens_ and targets_ in acts_, on the model's device (what the kernels read), and the
  // logits there when the caller asked for them (copied out after the head).
  int64_t* device_tokens_ = nullptr;
  int64_t* device_targets_ = nullptr;
  ops::View device_logits_;
  std::vector<ops::AttentionSegment> segments_;
  RopeFrequencies rope_, rope_long_;
  ModelConfig sliding_config_;  // config_ with its sliding_rope as rope (when it has one)
  RopeFrequencies rope_sliding_, rope_sliding_long_;
  // Gemma: sqrt(hidden_size) in the checkpoint's dtype (Gemma3TextScaledWordEmbedding), times
  // Granite's embedding_multiplier; 1 for the others.
  float embed_scale_ = 1;
  Arena acts_, bwd_, decode_;
  // On a device: the pinned host mirror of the batch's inputs in acts_ (the rope tables, then
  // the token and target ids, consecutive there), so they cross in one copy per forward.
  Arena staging_;
  ops::Workspace head_ws_;  // the LM head's, in acts_ (carved with the forward's scratch)
  size_t acts_bytes_ = 0;
  ops::View resid_;               // (L + 1, T, C): embedding output, then each layer's output
  ops::View lnf_, rstdf_, dlnf_;  // (T, C) compute dtype, (T, 1), (T, C) LM head's dx
  ops::View cos_, sin_;           // (T, R/2): R the rotary dims of a head
  ops::View cos_sliding_, sin_sliding_;  // the same for rope set 1, or empty
  std::vector<LayerActivations> la_;
  LayerScratch scratch_;
  // The load-balancing loss: its (2, E) sums over the expert layers (ops::moe_router_load),
  // its value, weight, and the gradient on every router probability row (1, E).
  std::vector<float> router_load_, aux_grad_row_;
  std::vector<uint8_t> padding_;  // the batch's padding mask, (T_real_) 0 where it has none
  int64_t aux_rows_ = 0;          // the rows the loss counts: real tokens × expert layers
  double router_aux_loss_ = 0, aux_weight_ = 0;
  // On a device (acts_): rows 0–1 the sums, row 2 the gradient row, and the padding mask there;
  // empty / null on the CPU.
  ops::View device_moe_rows_;
  uint8_t* device_padding_ = nullptr;
  void add_router_aux_loss_grad(LayerScratch& g);
  std::optional<double> head_grad_scale_;  // the LM head's gradient is in dlnf_ for this scale
  bool has_forward_ = false;
};

}  // namespace sft::model
