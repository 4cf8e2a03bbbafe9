// Stacked experts ↔ per-expert checkpoint tensors. See moe_checkpoint.h.
#include "model/moe_checkpoint.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <span>
#include <string>

#include "model/param_slices.h"

namespace sft::model {

namespace {

// One expert's matrix inside a stacked tensor: its name on disk, its shape and its first
// element in the stack.
struct ExpertPiece {
  std::string name;
  Shape shape;
  int64_t offset;
};

bool is_stack(const ParamSpec& p) {
  return p.slot == ParamSlot::kExpertsGateUp || p.slot == ParamSlot::kExpertsDown;
}

// gate_up_proj (E, 2I, C) → experts.<e>.gate_proj (I, C), experts.<e>.up_proj (I, C);
// down_proj (E, C, I) → experts.<e>.down_proj (C, I).
std::vector<ExpertPiece> pieces_of(const ParamSpec& p) {
  const std::string stacked = p.slot == ParamSlot::kExpertsGateUp ? "gate_up_proj" : "down_proj";
  const std::string prefix = p.name.substr(0, p.name.size() - stacked.size());  // "...experts."
  const int64_t E = p.shape[0], rows = p.shape[1], cols = p.shape[2];
  std::vector<ExpertPiece> out;
  for (int64_t e = 0; e < E; ++e) {
    const std::string expert = prefix + std::to_string(e) + ".";
    if (p.slot == ParamSlot::kExpertsGateUp) {
      const int64_t half = rows / 2;
      out.push_back({expert + "gate_proj.weight", {half, cols}, e * rows * cols});
      out.push_back({expert + "up_proj.weight", {half, cols}, e * rows * cols + half * cols});
    } else {
      out.push_back({expert + "down_proj.weight", {rows, cols}, e * rows * cols});
    }
  }
  return out;
}

// gpt-oss's form on disk (kTransposedInterleaved): gate_up_proj (E, C, 2I) with expert e's
// gate row i at column 2i and its up row i at column 2i + 1, down_proj (E, I, C), and
// gate_up_proj_bias (E, 2I) interleaved as those columns. Element `k` of sft's tensor (in
// row-major order of spec.shape) is element disk_index(k) of the one on disk.
bool transposed_slot(ParamSlot slot) {
  return slot == ParamSlot::kExpertsGateUp || slot == ParamSlot::kExpertsDown ||
         slot == ParamSlot::kExpertsGateUpBias;
}

Shape disk_shape(const ParamSpec& p) {
  if (p.slot == ParamSlot::kExpertsGateUp || p.slot == ParamSlot::kExpertsDown)
    return {p.shape[0], p.shape[2], p.shape[1]};
  return p.shape;
}

// Calls f(sft index, disk index) for every element of `p`.
template <typename F>
void for_each_disk_index(const ParamSpec& p, F&& f) {
  const int64_t E = p.shape[0], rows = p.shape[1];
  if (p.slot == ParamSlot::kExpertsGateUpBias) {  // (E, 2I): interleave the halves
    const int64_t I = rows / 2;
    for (int64_t e = 0; e < E; ++e)
      for (int64_t r = 0; r < rows; ++r)
        f(e * rows + r, e * rows + (r < I ? 2 * r : 2 * (r - I) + 1));
    return;
  }
  const int64_t cols = p.shape[2];
  for (int64_t e = 0; e < E; ++e) {
    for (int64_t r = 0; r < rows; ++r) {
      // gate_up: sft row r is the gate's (r < I) or the up's; on disk a column of (C, 2I).
      const int64_t I = rows / 2;
      const int64_t column = p.slot == ParamSlot::kExpertsGateUp ? (r < I ? 2 * r : 2 * (r - I) + 1)
                                                                 : r;  // down: (I, C) → (C, I)
      for (int64_t c = 0; c < cols; ++c)
        f((e * rows + r) * cols + c, (e * cols + c) * rows + column);
    }
  }
}

// One tensor's name after model.layers.N. in memory (as checkpoint_layout reads it) and on disk;
// '#' stands for an expert's index.
struct NameRule {
  const char* memory;
  const char* disk;
};

constexpr NameRule kPerExpertW[] = {
    {"mlp.gate.weight", "block_sparse_moe.gate.weight"},
    {"mlp.experts.#.gate_proj.weight", "block_sparse_moe.experts.#.w1.weight"},
    {"mlp.experts.#.up_proj.weight", "block_sparse_moe.experts.#.w3.weight"},
    {"mlp.experts.#.down_proj.weight", "block_sparse_moe.experts.#.w2.weight"},
};
constexpr NameRule kStackedLinear[] = {
    {"block_sparse_moe.router.weight", "block_sparse_moe.router.layer.weight"},
    {"block_sparse_moe.experts.gate_up_proj", "block_sparse_moe.input_linear.weight"},
    {"block_sparse_moe.experts.down_proj", "block_sparse_moe.output_linear.weight"},
};

std::span<const NameRule> rules_of(ExpertsOnDisk form) {
  switch (form) {
    case ExpertsOnDisk::kPerExpertW:
      return kPerExpertW;
    case ExpertsOnDisk::kStackedLinear:
      return kStackedLinear;
    case ExpertsOnDisk::kPerExpertProj:
    case ExpertsOnDisk::kTransposedInterleaved:  // sft's names, other arrangements
      break;
  }
  return {};  // stored as checkpoint_layout reads it
}

// `rest` rewritten from pattern `from` to pattern `to`, or nullopt when it does not match.
std::optional<std::string> rewrite(const std::string& rest, std::string_view from,
                                   std::string_view to) {
  const size_t hash = from.find('#');
  if (hash == std::string_view::npos)
    return rest == from ? std::optional<std::string>(std::string(to)) : std::nullopt;
  const std::string_view prefix = from.substr(0, hash), suffix = from.substr(hash + 1);
  if (rest.size() <= prefix.size() + suffix.size() || rest.compare(0, prefix.size(), prefix) != 0 ||
      rest.compare(rest.size() - suffix.size(), suffix.size(), suffix) != 0)
    return std::nullopt;
  const std::string index = rest.substr(prefix.size(), rest.size() - prefix.size() - suffix.size());
  for (const char ch : index)
    if (!std::isdigit(static_cast<unsigned char>(ch))) return std::nullopt;
  const size_t to_hash = to.find('#');
  return std::string(to.substr(0, to_hash)) + index + std::string(to.substr(to_hash + 1));
}

// `name` (…layers.N.<rest>) with its rest moved between the two forms; other names as they are.
std::string renamed(const std::string& name, std::span<const NameRule> rules, bool to_disk) {
  const size_t at = name.find("layers.");
  if (at == std::string::npos) return name;
  size_t end = at + sizeof("layers.") - 1;
  const size_t digits = end;
  while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end]))) ++end;
  if (end == digits || end >= name.size() || name[end] != '.') return name;
  const std::string head = name.substr(0, end + 1), rest = name.substr(end + 1);
  for (const NameRule& r : rules)
    if (auto out = rewrite(rest, to_disk ? r.memory : r.disk, to_disk ? r.disk : r.memory))
      return head + *out;
  return name;
}

}  // namespace

SafetensorsCheckpoint experts_view(SafetensorsCheckpoint ckpt, const ModelConfig& config) {
  const std::span<const NameRule> rules = rules_of(config.experts_on_disk);
  if (!config.has_experts() || rules.empty()) return ckpt;
  return SafetensorsCheckpoint::renamed(
      std::move(ckpt), [&](const std::string& name) { return renamed(name, rules, false); });
}

bool converted_on_disk(const ParamSpec& spec, const ModelConfig& config) {
  return config.experts_on_disk == ExpertsOnDisk::kTransposedInterleaved &&
         transposed_slot(spec.slot);
}

Tensor on_disk_form(const ParamSpec& spec, const float* values) {
  Tensor t = Tensor::zeros(DType::kF32, disk_shape(spec));
  float* out = t.mutable_values<float>().data();
  for_each_disk_index(spec, [&](int64_t k, int64_t d) { out[d] = values[k]; });
  return t;
}

std::vector<ParamSpec> checkpoint_layout(const std::vector<ParamSpec>& layout,
                                         const SafetensorsCheckpoint& ckpt,
                                         const ModelConfig& config) {
  std::vector<ParamSpec> out;
  for (const ParamSpec& p : layout) {
    if (converted_on_disk(p, config)) {
      ParamSpec q = p;
      q.shape = q.full_shape = disk_shape(p);
      out.push_back(std::move(q));
      continue;
    }
    if (!is_stack(p) || ckpt.contains(p.name)) {
      out.push_back(p);
      continue;
    }
    for (const ExpertPiece& piece : pieces_of(p)) {
      ParamSpec q = p;
      q.name = piece.name;
      q.shape = piece.shape;
      q.full_shape = piece.shape;
      out.push_back(std::move(q));
    }
  }
  return out;
}

void load_checkpoint_parameters(const SafetensorsCheckpoint& ckpt, ParameterSet& params,
                                const ModelConfig& config) {
  for (const Parameter& p : params.all()) {
    float* value = p.value.as<float>();
    if (converted_on_disk(p.spec, config)) {  // shape checked by the caller (checkpoint_layout)
      const std::vector<float> stored = ckpt.tensor(p.spec.name).to_f32_vector();
      for_each_disk_index(p.spec, [&](int64_t k, int64_t d) { value[k] = stored[d]; });
      continue;
    }
    if (!is_stack(p.spec)) {
      read_block(ckpt.file_of(p.spec.name), ckpt.entry(p.spec.name), p.spec, value);
      continue;
    }
    if (ckpt.contains(p.spec.name)) {
      // Stored stacked (E, rows, cols; shape checked by the caller): the block readers take
      // 1-D and 2-D tensors only, so one whole copy in f32.
      const std::vector<float> whole = ckpt.tensor(p.spec.name).to_f32_vector();
      std::copy(whole.begin(), whole.end(), value);
      continue;
    }
    for (const ExpertPiece& piece : pieces_of(p.spec)) {
      const TensorEntry& entry = ckpt.entry(piece.name);
      read_tensor_block(ckpt.file_of(piece.name), entry, whole_tensor_block(entry),
                        {value + piece.offset, static_cast<size_t>(shape_numel(piece.shape))});
    }
  }
}

std::vector<const Parameter*> converted_sources(const ParameterSet& params,
                                                const ModelConfig& config) {
  const bool per_expert = config.experts_on_disk != ExpertsOnDisk::kStackedLinear &&
                          config.experts_on_disk != ExpertsOnDisk::kTransposedInterleaved;
  std::vector<const Parameter*> out;
  for (const Parameter& p : params.all()) {
    if (converted_on_disk(p.spec, config))
      out.push_back(&p);
    else if (is_stack(p.spec) && per_expert)
      out.insert(out.end(), pieces_of(p.spec).size(), nullptr);
    else
      out.push_back(nullptr);
  }
  return out;
}

std::vector<NamedTensor> checkpoint_tensors(const ParameterSet& params, const ModelConfig& config) {
  const std::span<const NameRule> rules = rules_of(config.experts_on_disk);
  const bool per_expert = config.experts_on_disk != ExpertsOnDisk::kStackedLinear &&
                          config.experts_on_disk != ExpertsOnDisk::kTransposedInterleaved;
  std::vector<NamedTensor> out;
  std::vector<NamedTensor> values = params.named_values();  // in all()'s order
  for (size_t i = 0; i < values.size(); ++i) {
    NamedTensor& t = values[i];
    const Parameter& p = params.all()[i];
    if (converted_on_disk(p.spec, config)) {
      out.push_back({t.name, on_disk_form(p.spec, p.value.as<float>())});
      continue;
    }
    if (!is_stack(p.spec) || !per_expert) {
      t.name = renamed(t.name, rules, true);
      out.push_back(std::move(t));
      continue;
    }
    const float* base = p.value.as<float>();
    for (const ExpertPiece& piece : pieces_of(p.spec))
      out.push_back({renamed(piece.name, rules, true),
                     Tensor::borrow(DType::kF32, piece.shape, base + piece.offset, nullptr)});
  }
  return out;
}

}  // namespace sft::model
