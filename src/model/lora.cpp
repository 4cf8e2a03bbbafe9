// LoRA adapters: target resolution, PEFT's initialisation, forward/backward. See lora.h.
#include "model/lora.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <sstream>

#include "core/arena.h"
#include "core/edit_distance.h"
#include "core/error.h"
#include "core/torch_generator.h"
#include "model/torch_init.h"
#include "ops/ops.h"

namespace sft::model {

namespace {

constexpr uint64_t kDropoutStream = 0x4c6f5244'00000000ull;  // "LoRD": dropout masks

bool is_projection(ParamSlot s) {
  switch (s) {
    case ParamSlot::kQ:
    case ParamSlot::kK:
    case ParamSlot::kV:
    case ParamSlot::kO:
    case ParamSlot::kGate:
    case ParamSlot::kUp:
    case ParamSlot::kDown:
    case ParamSlot::kQKV:
    case ParamSlot::kGateUp:
      return true;
    default:
      return false;
  }
}

// A projection's place in PEFT's module order within a layer (named_modules follows the
// modules' registration: q, k, v, o, gate, up, down; Phi3Attention registers o_proj before
// qkv_proj). The adapters draw their init in this order.
int peft_module_rank(ParamSlot s) {
  switch (s) {
    case ParamSlot::kQ:
      return 0;
    case ParamSlot::kK:
      return 1;
    case ParamSlot::kV:
      return 2;
    case ParamSlot::kO:
      return 3;
    case ParamSlot::kQKV:
      return 4;
    case ParamSlot::kGateUp:
    case ParamSlot::kGate:
      return 5;
    case ParamSlot::kUp:
      return 6;
    default:
      return 7;
  }
}

// "model.layers.0.self_attn.q_proj.weight" → "model.layers.0.self_attn.q_proj".
std::string module_path(const std::string& param_name) {
  const size_t dot = param_name.rfind('.');
  return dot == std::string::npos ? param_name : param_name.substr(0, dot);
}

// PEFT's rule: the module path equals the name or ends with "." + name.
bool module_matches(const std::string& path, const std::string& name) {
  return path == name || (path.size() > name.size() && path.ends_with("." + name));
}

// A (rows, cols) view of `dtype` at the start of `arena` (grown to fit: the step loop then
// reuses it), on the arena's device.
ops::View grown(Arena& arena, DType dtype, int64_t rows, int64_t cols) {
  arena.reserve(std::max<size_t>(1, static_cast<size_t>(rows * cols) * dtype_size(dtype)));
  return ops::View{arena.data(), dtype, rows, cols, arena.device()};
}

// The first Philox word of micro-batch `key`'s mask: each key owns a 2^40-word window of the
// adapter's stream, so micro-batches never share draws.
uint64_t dropout_position(uint64_t key) {
  return key << 40;
}

}  // namespace

const std::vector<std::string>& lora_projection_names(const ModelConfig& config) {
  static const std::vector<std::string> names = {"q_proj",    "k_proj",  "v_proj",   "o_proj",
                                                 "gate_proj", "up_proj", "down_proj"};
  // PEFT's all-linear on Phi-3: every nn.Linear but the head, i.e. the stored modules.
  static const std::vector<std::string> fused = {"qkv_proj", "o_proj", "gate_up_proj", "down_proj"};
  return config.fused_projections ? fused : names;
}

namespace {

// 0.05, not std::to_string's 0.050000.
std::string number_text(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

// Where target_parameters came from, for messages: `what` names the flag that enabled LoRA on
// the command line (then the list came from --lora_target_parameters), or the
// adapter_config.json it was read from.
std::string target_parameters_source(const std::string& what) {
  return what.starts_with("--") ? std::string("--lora_target_parameters")
                                : what + ": target_parameters";
}

// PEFT's TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING: llama, mistral, mixtral, qwen2,
// qwen3, gemma2 and gemma3_text alike; it has no entry for smollm3, olmo2, granite, phi3 or the
// other mixtures of experts (PEFT 0.21.2).
bool has_peft_default_targets(ModelType type) {
  switch (type) {
    case ModelType::kLlama:
    case ModelType::kMistral:
    case ModelType::kMixtral:
    case ModelType::kQwen2:
    case ModelType::kQwen3:
    case ModelType::kGemma2:
    case ModelType::kGemma3Text:
      return true;
    default:
      return false;
  }
}

}  // namespace

std::vector<std::string> lora_default_targets(const ModelConfig& config) {
  // Without a default PEFT asks for target_modules (or target_parameters).
  if (has_peft_default_targets(config.model_type)) return {"q_proj", "v_proj"};
  fail("lora", "PEFT has no default LoRA target modules for model_type " +
                   std::string(model_type_name(config.model_type)) +
                   (config.fused_projections
                        ? " (hint: name them, e.g. --lora_target_modules qkv_proj "
                          "gate_up_proj, or all-linear)"
                        : " (hint: name them, e.g. --lora_target_modules q_proj v_proj, or "
                          "all-linear)"));
}

namespace {

// Phi-3 has no q_proj ... up_proj modules (PEFT would find no such module): the fused ones
// are the targets there, each with one lora_A and one lora_B.
void check_fused_targets(const LoraConfig& c, const ModelConfig& mc, const std::string& what) {
  if (!mc.fused_projections) return;
  for (const std::string& t : c.target_modules) {
    const std::string leaf = t.substr(t.rfind('.') + 1);
    const bool attn = leaf == "q_proj" || leaf == "k_proj" || leaf == "v_proj";
    if (attn || leaf == "gate_proj" || leaf == "up_proj")
      fail("lora", what + ": target module '" + t + "': model_type " +
                       std::string(model_type_name(mc.model_type)) +
                       " stores self_attn.qkv_proj and mlp.gate_up_proj fused, so it has no " +
                       leaf + " module (hint: --lora_target_modules " +
                       (attn ? "qkv_proj" : "gate_up_proj") +
                       ", which PEFT adapts as one projection)");
  }
}

}  // namespace

std::vector<std::string> resolve_lora_targets(const LoraConfig& c, const ModelConfig& mc,
                                              const std::string& what) {
  check_fused_targets(c, mc, what);
  if (c.r <= 0)
    fail("lora", what + ": rank r = " + std::to_string(c.r) +
                     " must be positive (hint: --lora_r 16 is TRL's default)");
  if (c.dropout < 0 || c.dropout >= 1)
    fail("lora", what + ": lora_dropout " + std::to_string(c.dropout) + " must be in [0, 1)");
  if (!c.target_parameters.empty() && c.dropout > 0)
    fail("lora", target_parameters_source(what) + ": lora_dropout " + number_text(c.dropout) +
                     " is refused, as PEFT's ParamWrapper refuses dropout on an adapted parameter "
                     "(dropout(x) cannot be factored out of the adapted weight) (hint: "
                     "--lora_dropout 0)");
  if (c.target_modules.empty())
    return c.target_parameters.empty() || has_peft_default_targets(mc.model_type)
               ? lora_default_targets(mc)
               : std::vector<std::string>{};
  const auto& all = lora_projection_names(mc);
  if (c.target_modules.size() == 1 &&
      (c.target_modules[0] == "all-linear" || c.target_modules[0] == "all_linear"))
    return all;
  std::vector<std::string> out;
  for (const std::string& t : c.target_modules) {
    // A name or a dotted suffix of a projection's module path ("self_attn.q_proj").
    const size_t dot = t.rfind('.');
    const std::string leaf = dot == std::string::npos ? t : t.substr(dot + 1);
    if (std::find(all.begin(), all.end(), leaf) == all.end()) {
      std::string list;
      for (const auto& n : all) list += (list.empty() ? "" : ", ") + n;
      fail("lora", what + ": target module '" + t + "' is not a projection of this " +
                       std::string(model_type_name(mc.model_type)) + " model (hint: one of " +
                       list + ", or all-linear; the LM head cannot be adapted)");
    }
    if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
  }
  return out;
}

double lora_scale(const LoraConfig& c) {
  return c.use_rslora ? c.alpha / std::sqrt(static_cast<double>(c.r))
                      : c.alpha / static_cast<double>(c.r);
}

std::string peft_key(const std::string& base_param_name, const std::string& which) {
  if (which.empty()) return "base_model.model." + base_param_name;
  return "base_model.model." + module_path(base_param_name) + "." + which + ".weight";
}

LoraModel::LoraModel(const ParameterSet& base, const ModelConfig& mc, const LoraConfig& config,
                     uint64_t seed, const std::string& what)
    : config_(config), params_({}) {
  targets_ = resolve_lora_targets(config, mc, what);
  std::vector<ParamSpec> specs;
  for (const Parameter& p : base.all()) {
    if (!is_projection(p.spec.slot)) continue;
    const std::string path = module_path(p.spec.name);
    bool hit = false;
    for (const std::string& t : targets_) hit = hit || module_matches(path, t);
    if (hit) adapted_.push_back(&p);
  }
  // PEFT's order (the init draws follow it); the layout's differs only for Phi-3 (qkv_proj
  // before o_proj).
  std::stable_sort(adapted_.begin(), adapted_.end(), [](const Parameter* x, const Parameter* y) {
    if (x->spec.layer != y->spec.layer) return x->spec.layer < y->spec.layer;
    return peft_module_rank(x->spec.slot) < peft_module_rank(y->spec.slot);
  });
  const std::vector<const Parameter*> stacks = expert_targets(base, mc, what);
  auto add_projection = [&](const Parameter& p) {
    const int64_t O = p.spec.shape[0], I = p.spec.shape[1];
    specs.push_back(
        {peft_key(p.spec.name, "lora_A"), {config.r, I}, p.spec.role, p.spec.layer, p.spec.slot});
    specs.push_back(
        {peft_key(p.spec.name, "lora_B"), {O, config.r}, p.spec.role, p.spec.layer, p.spec.slot});
  };
  auto add_stack = [&](const Parameter& p) {
    const int64_t E = p.spec.shape[0], O = p.spec.shape[1], I = p.spec.shape[2];
    // PEFT nests two targets on one experts module: the one wrapped first (gate_up_proj,
    // registered first) sits under the other's base_layer.
    const bool nested =
        p.spec.slot == ParamSlot::kExpertsGateUp &&
        std::find_if(stacks.begin(), stacks.end(), [&](const Parameter* q) {
          return q->spec.layer == p.spec.layer && q->spec.slot == ParamSlot::kExpertsDown;
        }) != stacks.end();
    const std::string module =
        "base_model.model." + module_path(p.spec.name) + (nested ? ".base_layer" : "");
    // The slot of a plain MLP matrix: the stacks' own slots carry their on-disk conversion
    // (gpt-oss's transposition, model/moe_checkpoint.h), which PEFT's A and B do not have.
    specs.push_back({module + ".lora_A.weight",
                     {config.r * E, I},
                     p.spec.role,
                     p.spec.layer,
                     ParamSlot::kDown});
    specs.push_back({module + ".lora_B.weight",
                     {O, config.r * E},
                     p.spec.role,
                     p.spec.layer,
                     ParamSlot::kDown});
  };
  // Adapter k is projection k, or stack k - adapted_.size(): PEFT's drawing order. They are
  // stored layer by layer (ZeRO-3 gathers a layer's trainable parameters as one run of the
  // arena), a layer's projections before its stacks; first[k] is the index of adapter k's A,
  // its B comes next.
  std::vector<const Parameter*> targets = adapted_;
  targets.insert(targets.end(), stacks.begin(), stacks.end());
  std::vector<size_t> stored(targets.size());
  std::iota(stored.begin(), stored.end(), size_t{0});
  std::stable_sort(stored.begin(), stored.end(), [&](size_t x, size_t y) {
    return targets[x]->spec.layer < targets[y]->spec.layer;
  });
  std::vector<size_t> first(targets.size());
  for (size_t k : stored) {
    first[k] = specs.size();
    if (k < adapted_.size())
      add_projection(*targets[k]);
    else
      add_stack(*targets[k]);
  }
  std::vector<const Parameter*> saved_base;
  for (const std::string& m : config.modules_to_save) {
    bool found = false;
    for (const Parameter& p : base.all()) {
      // PEFT's _set_trainable matches modules_to_save by plain suffix ("norm" takes every
      // *norm module: input_layernorm, q_norm, ..., model.norm).
      if (!module_path(p.spec.name).ends_with(m)) continue;
      if (p.spec.slot == ParamSlot::kEmbed && mc.tie_word_embeddings)
        fail("lora", what + ": modules_to_save '" + m +
                         "' names the embedding, which this model ties to the LM head (hint: "
                         "sft does not untie weights for modules_to_save; leave it out)");
      if (std::find(saved_base.begin(), saved_base.end(), &p) != saved_base.end()) continue;
      ParamSpec s = p.spec;
      s.name = peft_key(p.spec.name, "");
      specs.push_back(s);
      saved_base.push_back(&p);
      found = true;
    }
    if (!found)
      fail("lora", what + ": modules_to_save '" + m +
                       "' matches no module of the model (hint: a module name such as "
                       "lm_head, embed_tokens, norm or input_layernorm)");
  }
  if (adapted_.empty() && stacks.empty() && saved_base.empty())
    fail("lora", what + ": the target modules match no projection of the model");
  params_ = ParameterSet(specs);

  const std::span<Parameter> ps = params_.all();
  const float scale = static_cast<float>(lora_scale(config));
  // torch's generator after transformers.set_seed(seed), as PEFT consumes it (lora.h).
  TorchGenerator gen(seed);
  for (size_t i = 0; i < adapted_.size(); ++i) {
    const Parameter& a = ps[first[i]];
    const int64_t r = a.value.rows, I = a.value.cols, O = ps[first[i] + 1].value.rows;
    torch_skip_uniform(gen, r * I);  // nn.Linear(I, r)'s own init of lora_A
    torch_skip_uniform(gen, O * r);  // nn.Linear(r, O)'s of lora_B
    torch_kaiming_uniform(gen, {a.value.as<float>(), static_cast<size_t>(r * I)}, I,
                          std::sqrt(5.0));
    // B stays zero (a fresh arena is zero-filled), so the adapted model starts as the base.
    LoraAdapter ad;
    ad.a = &a;
    ad.b = &ps[first[i] + 1];
    ad.scale = scale;
    ad.dropout = static_cast<float>(config.dropout);
    ad.seed = seed;
    ad.stream = kDropoutStream + i;
    ad.key = &key_;
    ad.training = &training_;
    adapters_.push_back(ad);
  }
  bind_fused_parts(base);
  // The expert stacks' adapters, drawn after every projection's as PEFT injects them.
  for (size_t k = 0; k < stacks.size(); ++k) {
    const Parameter& a = ps[first[adapted_.size() + k]];
    const Parameter& b = ps[first[adapted_.size() + k] + 1];
    const int64_t rE = a.value.rows, I = a.value.cols, O = b.value.rows;
    torch_skip_uniform(gen, rE * I);
    torch_skip_uniform(gen, O * rE);
    torch_kaiming_uniform(gen, {a.value.as<float>(), static_cast<size_t>(rE * I)}, I,
                          std::sqrt(5.0));
    const bool gate_up = stacks[k]->spec.slot == ParamSlot::kExpertsGateUp;
    ExpertLoraAdapter ad;
    ad.a = &a;
    ad.b = &b;
    ad.base = stacks[k];
    ad.experts = stacks[k]->spec.shape[0];
    ad.r = config.r;
    // gpt-oss keeps gate and up alternating along the output PEFT sees (model/expert_lora.h).
    ad.parts = gate_up && mc.experts_on_disk == ExpertsOnDisk::kTransposedInterleaved ? 2 : 1;
    ad.scale = scale;
    ad.scratch = gate_up ? &gate_up_scratch_ : &down_scratch_;
    expert_adapters_.push_back(ad);
  }
  for (size_t i = 0; i < saved_base.size(); ++i) {
    const Parameter& copy = ps[2 * (adapted_.size() + stacks.size()) + i];
    std::memcpy(copy.value.data, saved_base[i]->value.data,
                static_cast<size_t>(copy.value.numel()) * sizeof(float));
    saved_.push_back({saved_base[i], &copy});
  }
}

void LoraModel::bind_fused_parts(const ParameterSet& base) {
  // The blocks compute a fused tensor's row blocks as projections of their own (ParameterSet's
  // parts: q, k, v of qkv_proj; gate, up of gate_up_proj). Each part gets a copy of the fused
  // adapter that adds only its rows of B: (x Aᵀ) B_partᵀ is the part's columns of (x Aᵀ) Bᵀ,
  // and the parts' dA and dx contributions sum to the fused adapter's. The copies share A, B,
  // the dropout stream (so one mask for all parts, as PEFT's one dropout) and the key.
  struct Part {
    ParamSlot fused, part;
  };
  static constexpr Part kParts[] = {{ParamSlot::kQKV, ParamSlot::kQ},
                                    {ParamSlot::kQKV, ParamSlot::kK},
                                    {ParamSlot::kQKV, ParamSlot::kV},
                                    {ParamSlot::kGateUp, ParamSlot::kGate},
                                    {ParamSlot::kGateUp, ParamSlot::kUp}};
  for (size_t i = 0; i < adapted_.size(); ++i) {
    const Parameter& fused = *adapted_[i];
    for (const Part& k : kParts) {
      if (fused.spec.slot != k.fused) continue;
      const Parameter& part = base.at(k.part, fused.spec.layer);
      LoraAdapter ad = adapters_[i];
      ad.b_begin = (part.offset - fused.offset) / fused.value.cols;
      ad.b_rows = part.value.rows;
      part_adapters_.push_back(ad);
      part_weights_.push_back(&part);
    }
  }
}

std::vector<const Parameter*> LoraModel::expert_targets(const ParameterSet& base,
                                                        const ModelConfig& mc,
                                                        const std::string& what) const {
  auto is_stack = [](const Parameter& p) {
    return p.spec.slot == ParamSlot::kExpertsGateUp || p.spec.slot == ParamSlot::kExpertsDown;
  };
  // The names a user would write: a stack's path below its layer ("mlp.experts.down_proj").
  std::vector<std::string> names;
  for (const Parameter& p : base.all()) {
    if (!is_stack(p)) continue;
    const size_t layers = p.spec.name.find("layers.");
    const size_t dot = layers == std::string::npos ? layers : p.spec.name.find('.', layers + 7);
    std::string n = dot == std::string::npos ? p.spec.name : p.spec.name.substr(dot + 1);
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(std::move(n));
  }
  const std::string source = target_parameters_source(what);
  std::vector<const Parameter*> out;
  for (const std::string& t : config_.target_parameters) {
    if (names.empty())
      fail("lora", source + ": '" + t + "': model_type " +
                       std::string(model_type_name(mc.model_type)) +
                       " has no stacked expert weights, the only parameters sft adapts through "
                       "target_parameters (hint: --lora_target_modules for its projections)");
    bool hit = false;
    for (const Parameter& p : base.all()) {
      if (!module_matches(p.spec.name, t)) continue;
      if (!is_stack(p))
        fail("lora", source + ": '" + t + "' matches " + p.spec.name +
                         ", which is not a stacked expert weight (hint: target_parameters "
                         "adapts the experts' " +
                         names.front() +
                         " and the like; a projection is adapted through "
                         "--lora_target_modules)");
      hit = true;
      if (std::find(out.begin(), out.end(), &p) == out.end()) out.push_back(&p);
    }
    if (hit) continue;
    const std::string* closest = &names.front();
    for (const std::string& n : names)
      if (edit_distance(t, n) < edit_distance(t, *closest)) closest = &n;
    fail("lora", source + ": '" + t + "' matches no parameter of this " +
                     std::string(model_type_name(mc.model_type)) + " model (hint: did you mean '" +
                     *closest + "'?)");
  }
  // PEFT's order: layer by layer, each experts module's parameters as registered.
  std::stable_sort(out.begin(), out.end(), [](const Parameter* x, const Parameter* y) {
    if (x->spec.layer != y->spec.layer) return x->spec.layer < y->spec.layer;
    return x->spec.slot == ParamSlot::kExpertsGateUp && y->spec.slot != x->spec.slot;
  });
  return out;
}

ExpertLoraAdapter* LoraModel::expert_adapter_for(const Parameter* stack) {
  for (ExpertLoraAdapter& ad : expert_adapters_)
    if (ad.base == stack) return &ad;
  return nullptr;
}

LoraAdapter* LoraModel::adapter_for(const Parameter* base_weight) {
  for (size_t i = 0; i < adapted_.size(); ++i)
    if (adapted_[i] == base_weight) return &adapters_[i];
  for (size_t i = 0; i < part_weights_.size(); ++i)
    if (part_weights_[i] == base_weight) return &part_adapters_[i];
  return nullptr;
}

const Parameter* LoraModel::base_of(const LoraAdapter* adapter) const {
  for (size_t i = 0; i < adapters_.size(); ++i)
    if (&adapters_[i] == adapter) return adapted_[i];
  for (size_t i = 0; i < part_adapters_.size(); ++i)
    if (&part_adapters_[i] == adapter) return part_weights_[i];
  return nullptr;
}

ops::View LoraAdapter::b_part(const ops::View& v) const {
  return b_rows == 0 || v.empty() ? v : v.row_range(b_begin, b_rows);
}

const Parameter* LoraModel::saved_copy_of(const Parameter* base) const {
  for (const auto& [b, c] : saved_)
    if (b == base) return c;
  return nullptr;
}

void LoraAdapter::move_scratch_to(Device device) {
  scratch_ = Scratch(device);
  u_view_ = {};
}

void LoraModel::to_device(const ParameterSet& old_base, const ParameterSet& new_base) {
  const Device device = new_base.device();
  ParameterSet moved = params_.copy_on(device);
  // Same layouts, so a parameter of all() keeps its index; a fused tensor's part (not in
  // all(): ParameterSet::bind_parts) is found by its slot and layer.
  auto in = [](const ParameterSet& to, const ParameterSet& from, const Parameter* p) {
    if (!p) return p;
    const std::span<const Parameter> all = from.all();
    if (p >= all.data() && p < all.data() + all.size())
      return &to.all()[static_cast<size_t>(p - all.data())];
    return &to.at(p->spec.slot, p->spec.layer);
  };
  for (const Parameter*& p : adapted_) p = in(new_base, old_base, p);
  for (const Parameter*& p : part_weights_) p = in(new_base, old_base, p);
  for (auto& [base, copy] : saved_) {
    base = in(new_base, old_base, base);
    copy = in(moved, params_, copy);
  }
  for (std::vector<LoraAdapter>* list : {&adapters_, &part_adapters_})
    for (LoraAdapter& ad : *list) {
      ad.a = in(moved, params_, ad.a);
      ad.b = in(moved, params_, ad.b);
      ad.move_scratch_to(device);
    }
  gate_up_scratch_ = ExpertLoraScratch(device);
  down_scratch_ = ExpertLoraScratch(device);
  for (ExpertLoraAdapter& ad : expert_adapters_) {
    ad.a = in(moved, params_, ad.a);
    ad.b = in(moved, params_, ad.b);
    ad.base = in(new_base, old_base, ad.base);
  }
  params_ = std::move(moved);
}

ops::View LoraAdapter::dropped_input(ops::View x) {
  if (!dropping()) return x;
  const ops::View xd = grown(scratch_.xd, x.dtype, x.rows, x.cols);
  ops::dropout(xd, x, dropout, seed, stream, dropout_position(*key), false);
  return xd;
}

void LoraAdapter::forward(ops::View y, ops::View x) {
  const ops::LowRankTerm t = forward_term(x);
  ops::matmul(y, t.a, t.b, false, true, true);
}

ops::LowRankTerm LoraAdapter::forward_term(ops::View x) {
  const int64_t N = x.rows, r = a->value.rows;
  const bool bf16 = x.dtype == DType::kBF16;
  const ops::View xd = dropped_input(x);
  const ops::View u = grown(scratch_.u, DType::kF32, N, r);
  ops::matmul(u, xd, bf16 ? a->bf16 : a->value, false, true, false);
  ops::scale(u, scale);  // (scale · u) Bᵀ: dB then comes out of the same saved product
  u_view_ = u;
  if (bf16) {
    u_view_ = grown(scratch_.u16, DType::kBF16, N, r);
    ops::cast(u_view_, u);
  }
  return {u_view_, b_part(bf16 ? b->bf16 : b->value)};
}

void LoraAdapter::backward(ops::View dx, ops::View dy, ops::View dy16, ops::View x) {
  const ops::LowRankTerm t = backward_params(dy, dy16, x);
  if (!dx.empty()) add_input_grad(dx, t, x);
}

ops::LowRankTerm LoraAdapter::backward_params(ops::View dy, ops::View dy16, ops::View x) {
  const int64_t N = x.rows, r = a->value.rows;
  const bool bf16 = x.dtype == DType::kBF16;
  const ops::View g = bf16 ? dy16 : dy;
  // dB += gᵀ (scale · u); du = scale · g B; dA += duᵀ drop(x); d drop(x) = du A.
  ops::View du = grown(scratch_.du, DType::kF32, N, r);
  const ops::View db = b_part(b->grad), bw = b_part(bf16 ? b->bf16 : b->value);
  const ops::View u = u_view_.first(N, r);
  ops::lora_backward_products(db, du, g, u, bw);
  ops::scale(du, scale);
  if (bf16) {
    const ops::View du16 = grown(scratch_.du16, DType::kBF16, N, r);
    ops::cast(du16, du);
    du = du16;
  }
  const ops::View xd = dropped_input(x);  // the forward's mask, drawn again
  ops::matmul(a->grad, du, xd, true, false, true);
  return {du, bf16 ? a->bf16 : a->value};
}

void LoraAdapter::add_input_grad(ops::View dx, const ops::LowRankTerm& t, ops::View x) {
  if (!dropping()) return ops::matmul(dx, t.a, t.b, false, false, true);
  const ops::View dxd = grown(scratch_.dxd, DType::kF32, x.rows, x.cols);
  ops::matmul(dxd, t.a, t.b, false, false, false);
  ops::dropout(dx, dxd, dropout, seed, stream, dropout_position(*key), true);
}

}  // namespace sft::model
