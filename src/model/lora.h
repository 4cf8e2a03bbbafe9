// LoRA (Hu et al. 2021) as PEFT 0.21 applies it to a causal LM: a targeted projection
// y = x Wᵀ + b becomes y = x Wᵀ + b + scale · (drop(x) Aᵀ) Bᵀ with A (r, I), B (O, r) trained
// and W, b frozen; scale = alpha / r, or alpha / sqrt(r) with rsLoRA. drop is inverted
// dropout on the adapter's input only (PEFT's lora_dropout), active in training forwards.
// modules_to_save: the named modules' parameters are copied and the copies trained in full
// (PEFT matches these by plain suffix of the module path: "norm" takes every *norm module).
//
// LoraModel owns the trainable ParameterSet (A and B of every adapted projection, then the
// modules_to_save copies) under the key names of PEFT's adapter_model.safetensors, e.g.
// "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"; the base ParameterSet
// keeps the frozen weights (no gradients, no optimizer state). The adapters' forward and
// backward run inside Linear (model/linear.h), which holds a LoraAdapter pointer.
//
// Target names follow PEFT: a module path matches a name when it equals it or ends with
// "." + name; "all-linear" = the seven projections (never the LM head). Without targets the
// per-architecture default of PEFT 0.21 applies (q_proj, v_proj for llama, mistral, mixtral,
// qwen2, qwen3, gemma2, gemma3_text). Phi-3's fused qkv_proj and gate_up_proj are one adapted
// Linear each, as in PEFT (one A (r, C), one B of the fused rows); all-linear there is qkv_proj,
// o_proj, gate_up_proj, down_proj, and PEFT has no default.
//
// target_parameters (PEFT's LoraConfig field, TRL's --lora_target_parameters) adapts a mixture
// of experts' stacked weights, mlp.experts.gate_up_proj and down_proj (block_sparse_moe's for
// GraniteMoe): a parameter path matches a name when it equals it or ends with "." + name, as
// PEFT matches; each adapted stack gets one lora_A (E·r, in) and one lora_B (out, r·E) under the
// key PEFT saves (two targets on one experts module nest in PEFT: gate_up_proj's keys read
// "experts.base_layer.lora_A.weight", down_proj's "experts.lora_A.weight"); the math is
// model/expert_lora.h's. As PEFT, it needs lora_dropout 0, and names that match a parameter that
// is not an expert stack (a projection's .weight, the router, a bias) are refused here with
// the way to target_modules. Without target_modules, PEFT's default targets join them where the
// architecture has them, else the experts alone are adapted.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/arena.h"
#include "model/config.h"
#include "model/expert_lora.h"
#include "model/parameters.h"
#include "ops/view.h"

namespace sft::model {

struct LoraConfig {
  int64_t r = 16;
  double alpha = 32;
  double dropout = 0.05;
  bool use_rslora = false;
  std::vector<std::string> target_modules;     // module names, or {"all-linear"}; empty: default
  std::vector<std::string> modules_to_save;    // trained in full
  std::vector<std::string> target_parameters;  // expert stacks (PEFT's target_parameters)
  std::string base_model_name_or_path;
};

// The projections' module names, in layer order: the seven, or Phi-3's four stored ones.
const std::vector<std::string>& lora_projection_names(const ModelConfig& config);
// PEFT 0.21's default targets for the architecture.
std::vector<std::string> lora_default_targets(const ModelConfig& config);
// The projection names `config` targets (checked: unknown names and r <= 0 are refused, with
// `what` naming the flag or file in the message). Empty when only target_parameters adapt.
std::vector<std::string> resolve_lora_targets(const LoraConfig& config,
                                              const ModelConfig& model_config,
                                              const std::string& what);
double lora_scale(const LoraConfig& config);

// One adapted projection. Mutable state: the last forward's saved (N, r) product and the
// scratch its backward needs, in arenas on the model's device; they grow to the largest batch
// and are then reused (no allocation in the step loop).
struct LoraAdapter {
  const Parameter* a = nullptr;  // (r, I)
  const Parameter* b = nullptr;  // (O, r)
  float scale = 1;
  float dropout = 0;
  uint64_t seed = 0, stream = 0;   // dropout mask stream of this adapter
  const uint64_t* key = nullptr;   // the dropout key of the current micro-batch (LoraModel)
  const bool* training = nullptr;  // dropout applies in training forwards only
  // A part of a fused projection (q of qkv_proj, ...) adds only B's rows [b_begin, b_begin +
  // b_rows); b_rows 0: all of B.
  int64_t b_begin = 0, b_rows = 0;

  // The rows of a (O, r) view of B (value, grad or bf16 copy) this adapter adds with.
  ops::View b_part(const ops::View& v) const;

  // y (N, O) f32 += scale · (drop(x) Aᵀ) Bᵀ; x (N, I) f32 or bf16 (bf16 copies of A and B).
  void forward(ops::View y, ops::View x);
  // forward without its last product: saves u = scale · drop(x) Aᵀ as forward does and returns
  // the term (u, B's part) for y += u Bᵀ, which a 4-bit base sums in its own product (Linear).
  ops::LowRankTerm forward_term(ops::View x);
  // dA, dB +=; dx (N, I) f32 += the adapter's input gradient (skipped when empty); dy (N, O)
  // f32, dy16 its bf16 copy under bf16 compute (already cast by Linear::backward).
  void backward(ops::View dx, ops::View dy, ops::View dy16, ops::View x);
  // backward in two halves: dA, dB += and the input gradient's term (du, A) for dx += du A,
  // then that add (through the dropout mask when there is one). Without dropout a 4-bit base
  // sums the term in its own input-gradient product instead (Linear).
  ops::LowRankTerm backward_params(ops::View dy, ops::View dy16, ops::View x);
  void add_input_grad(ops::View dx, const ops::LowRankTerm& term, ops::View x);
  bool input_grad_is_a_product() const { return !dropping(); }
  // Fresh scratch on `device` (LoraModel::to_device); the saved product is gone.
  void move_scratch_to(Device device);

 private:
  // An adapter copied (a fused tensor's parts from the fused adapter) gets scratch of its own
  // on the same device: each part saves its own product.
  struct Scratch {
    explicit Scratch(Device device = Device::kCpu)
        : u(device), du(device), xd(device), dxd(device), u16(device), du16(device) {}
    Scratch(const Scratch& other) : Scratch(other.u.device()) {}
    Scratch& operator=(const Scratch& other) { return *this = Scratch(other.u.device()); }
    Scratch(Scratch&&) noexcept = default;
    Scratch& operator=(Scratch&&) noexcept = default;
    Arena u, du;      // (N, r) f32
    Arena xd, dxd;    // (N, I), dropout only: drop(x) (x's dtype) and its f32 gradient
    Arena u16, du16;  // (N, r) bf16 under bf16 compute
  };
  bool dropping() const { return dropout > 0 && training && *training; }
  // xd = drop(x) into the scratch (same dtype as x), or x itself without dropout.
  ops::View dropped_input(ops::View x);
  Scratch scratch_;
  ops::View u_view_;  // the saved scale · drop(x) Aᵀ of the last forward (f32 or bf16)
};

class LoraModel {
 public:
  // Adapters for the targeted projections of `base` (layout order), A and B initialised bit
  // for bit as TRL + PEFT do for the same seed: torch's CPU generator seeded with `seed`
  // (transformers.set_seed; loading the model draws nothing), then per adapted projection in
  // PEFT's order (named_modules: layer by layer, q, k, v, o, gate, up, down, which is the
  // layout's) lora_A = nn.Linear(I, r) and lora_B = nn.Linear(r, O) draw their own default
  // init (r·I, then O·r numbers, discarded), and reset_lora_parameters draws A again with
  // kaiming_uniform_(a = sqrt(5)) (model/torch_init.h); B zero. The expert stacks come after
  // every projection (PEFT injects target_parameters last), layer by layer, gate_up_proj then
  // down_proj, the same draws with r·E for r. Dropout masks are sft's own (Rng streams), not
  // torch's.
  LoraModel(const ParameterSet& base, const ModelConfig& model_config, const LoraConfig& config,
            uint64_t seed, const std::string& what);

  const LoraConfig& config() const { return config_; }
  const std::vector<std::string>& targets() const { return targets_; }
  ParameterSet& params() { return params_; }
  const ParameterSet& params() const { return params_; }

  // The adapter of a base weight (a fused tensor's part included: its rows of the fused
  // adapter), or null.
  LoraAdapter* adapter_for(const Parameter* base_weight);
  // The base weight an adapter of adapter_for adds to (a part's own rows), or null.
  const Parameter* base_of(const LoraAdapter* adapter) const;
  // The trained copy of a base parameter (modules_to_save), or null.
  const Parameter* saved_copy_of(const Parameter* base) const;
  // Pairs (base, trained copy) of modules_to_save.
  const std::vector<std::pair<const Parameter*, const Parameter*>>& saved() const { return saved_; }
  // Base weight of each adapter, in adapter order (PEFT's module order; the fused tensors'
  // own adapters, not their parts').
  const std::vector<const Parameter*>& adapted_weights() const { return adapted_; }
  std::vector<LoraAdapter>& adapters() { return adapters_; }
  const std::vector<LoraAdapter>& adapters() const { return adapters_; }
  // The adapted expert stacks (target_parameters), layer by layer, gate_up_proj before down_proj.
  std::vector<ExpertLoraAdapter>& expert_adapters() { return expert_adapters_; }
  const std::vector<ExpertLoraAdapter>& expert_adapters() const { return expert_adapters_; }
  // The adapter of an expert stack, or null.
  ExpertLoraAdapter* expert_adapter_for(const Parameter* stack);

  void set_training(bool on) { training_ = on; }
  void set_dropout_key(uint64_t key) { key_ = key; }

  // Moves the adapters' parameters (values, and the bf16 copies and gradients when present) and
  // scratch to `new_base`'s device, and points every base weight at `new_base`, the base set
  // moved there (Transformer::to_device; the same layout as `old_base`, which is still alive).
  void to_device(const ParameterSet& old_base, const ParameterSet& new_base);

 private:
  void bind_fused_parts(const ParameterSet& base);
  // The expert stacks target_parameters names (checked against PEFT's rules).
  std::vector<const Parameter*> expert_targets(const ParameterSet& base, const ModelConfig& mc,
                                               const std::string& what) const;

  LoraConfig config_;
  std::vector<std::string> targets_;
  ParameterSet params_;
  std::vector<LoraAdapter> adapters_;
  std::vector<const Parameter*> adapted_;
  std::vector<std::pair<const Parameter*, const Parameter*>> saved_;
  // The fused tensors' parts: their adapters and weights.
  std::vector<LoraAdapter> part_adapters_;
  std::vector<const Parameter*> part_weights_;
  std::vector<ExpertLoraAdapter> expert_adapters_;
  // The stacks' shared scratch, one per kind: gate_up_proj's and down_proj's W' live together.
  ExpertLoraScratch gate_up_scratch_, down_scratch_;
  uint64_t key_ = 0;
  bool training_ = false;
};

// PEFT's key of a base parameter's adapter tensor: "base_model.model." + module path +
// ".lora_A.weight" (which = "lora_A" / "lora_B"); modules_to_save copies keep their base name
// behind the prefix.
std::string peft_key(const std::string& base_param_name, const std::string& which);

}  // namespace sft::model
