// Which frozen matrices are held in bf16 only. See frozen_base.h.
#include "model/frozen_base.h"

#include <utility>

namespace sft::model {

namespace {

bool is_matrix(const ParamSpec& spec) {
  return (spec.shape.size() == 2 || spec.shape.size() == 3) && spec.role != ParamRole::kNorm &&
         spec.role != ParamRole::kBias;
}

// PEFT's _set_trainable matches modules_to_save by plain suffix of the module path (lora.cpp
// does the same when it makes the copies).
bool saved_module(const ParamSpec& spec, const std::vector<std::string>& modules_to_save) {
  std::string path = spec.name;
  if (const size_t dot = path.rfind('.'); dot != std::string::npos) path.resize(dot);
  for (const std::string& m : modules_to_save)
    if (!m.empty() && path.ends_with(m)) return true;
  return false;
}

}  // namespace

FrozenBaseForm FrozenBaseForm::bf16(DType load_dtype, std::vector<std::string> modules_to_save) {
  return {.bf16_compute = true,
          .embedding_bf16 = load_dtype == DType::kBF16,
          .modules_to_save = std::move(modules_to_save)};
}

bool FrozenBaseForm::keeps_fp32(const ParamSpec& spec) const {
  return !is_matrix(spec) || (spec.slot == ParamSlot::kEmbed && !embedding_bf16);
}

bool FrozenBaseForm::held_in_bf16(const ParamSpec& spec) const {
  return bf16_compute && !keeps_fp32(spec) && !saved_module(spec, modules_to_save);
}

}  // namespace sft::model
