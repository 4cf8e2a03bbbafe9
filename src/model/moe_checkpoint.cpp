// Stacked experts ↔ per-expert checkpoint tensors. See moe_checkpoint.h.
#include "model/moe_checkpoint.h"

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

}  // namespace

std::vector<ParamSpec> checkpoint_layout(const std::vector<ParamSpec>& layout,
                                         const SafetensorsCheckpoint& ckpt) {
  std::vector<ParamSpec> out;
  for (const ParamSpec& p : layout) {
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

void load_checkpoint_parameters(const SafetensorsCheckpoint& ckpt, ParameterSet& params) {
  for (const Parameter& p : params.all()) {
    float* value = p.value.as<float>();
    if (!is_stack(p.spec) || ckpt.contains(p.spec.name)) {
      read_block(ckpt.file_of(p.spec.name), ckpt.entry(p.spec.name), p.spec, value);
      continue;
    }
    for (const ExpertPiece& piece : pieces_of(p.spec)) {
      const TensorEntry& entry = ckpt.entry(piece.name);
      read_tensor_block(ckpt.file_of(piece.name), entry, whole_tensor_block(entry),
                        {value + piece.offset, static_cast<size_t>(shape_numel(piece.shape))});
    }
  }
}

std::vector<NamedTensor> checkpoint_tensors(const ParameterSet& params) {
  std::vector<NamedTensor> out;
  std::vector<NamedTensor> values = params.named_values();  // in all()'s order
  for (size_t i = 0; i < values.size(); ++i) {
    NamedTensor& t = values[i];
    const Parameter& p = params.all()[i];
    if (!is_stack(p.spec)) {
      out.push_back(std::move(t));
      continue;
    }
    const float* base = p.value.as<float>();
    for (const ExpertPiece& piece : pieces_of(p.spec))
      out.push_back(
          {piece.name, Tensor::borrow(DType::kF32, piece.shape, base + piece.offset, nullptr)});
  }
  return out;
}

}  // namespace sft::model
