// Transformer::load_4bit and random_4bit (transformer.h): QLoRA's frozen base built one tensor
// at a time, so the 4-bit weights never exist whole in fp32 (only the one being quantized).
#include <cmath>

#include "core/error.h"
#include "core/rng.h"
#include "model/model_dir.h"
#include "model/param_slices.h"
#include "model/quant4_dequantize.h"
#include "model/quant4_weight.h"
#include "model/transformer.h"
#include "ops/cpu/bnb_quant.h"
#include "ops/ops.h"

namespace sft::model {

namespace {

// Phi-3's fused qkv_proj / gate_up_proj are bound as row blocks of one tensor; a 4-bit tensor
// has no such views yet.
void refuse_fused(const ParamSpec& spec, const std::string& where) {
  if (spec.slot == ParamSlot::kQKV || spec.slot == ParamSlot::kGateUp)
    fail("quant", where + ": '" + spec.name +
                      "' is a fused projection (Phi-3's qkv_proj / gate_up_proj); 4-bit fused "
                      "projections are not supported yet (hint: train it without --load_in_4bit)");
}

}  // namespace

Transformer Transformer::load_4bit(const std::string& model_dir, const Quant4Plan& plan) {
  const ModelDir dir = open_model_dir(model_dir);
  const SafetensorsCheckpoint ckpt = SafetensorsCheckpoint::open_dir(dir.path);
  auto stored_4bit = [&](const ParamSpec& spec) {
    return ckpt.contains(spec.name) && is_quant4_weight(ckpt.file_of(spec.name), spec.name);
  };
  // Stored 4-bit, or quantized here: a pre-quantized folder keeps what it stored in full
  // (its llm_int8_skip_modules) unless the plan quantizes it.
  auto four_bit = [&](const ParamSpec& spec) {
    return stored_4bit(spec) || quantized_by_plan(spec, plan);
  };
  for (const ParamSpec& spec : parameter_layout(dir.config))
    if (four_bit(spec)) refuse_fused(spec, dir.path);
  const LayoutMismatch mm = compare_with_layout(ckpt, parameter_layout(dir.config));
  if (!mm.ok())
    fail_in_file("model", {ckpt.source(), ""},
                 "weights do not match config.json:" + describe_mismatch(mm) + "\n",
                 "the checkpoint and config.json must come from the same model");
  Transformer m(dir.config, std::function<bool(const ParamSpec&)>(four_bit));
  std::vector<float> scratch;  // one weight in fp32 at a time
  for (size_t i = 0; i < m.params_.all().size(); ++i) {
    const Parameter& p = m.params_.all()[i];
    const SafetensorsFile& file = ckpt.file_of(p.spec.name);
    if (stored_4bit(p.spec)) {
      Quant4Weight w = read_quant4_weight(file, p.spec.name);
      m.params_.set_quant4(i, std::move(w.packed), std::move(w.absmax), w.state.blocksize,
                           w.state.type);
    } else if (four_bit(p.spec)) {
      scratch.resize(static_cast<size_t>(p.value.numel()));
      read_block(file, ckpt.entry(p.spec.name), p.spec, scratch.data());
      Quant4Data q = quantize_for_plan(scratch, plan);
      m.params_.set_quant4(i, std::move(q.packed), std::move(q.absmax), plan.blocksize, plan.type);
    } else {
      read_block(file, ckpt.entry(p.spec.name), p.spec, p.value.as<float>());
    }
  }
  return m;
}

Transformer Transformer::random_4bit(const ModelConfig& config, uint64_t seed, float std,
                                     const Quant4Plan& plan) {
  for (const ParamSpec& spec : parameter_layout(config))
    if (quantized_by_plan(spec, plan)) refuse_fused(spec, "random initialisation");
  auto four_bit = [&](const ParamSpec& spec) { return quantized_by_plan(spec, plan); };
  Transformer m(config, std::function<bool(const ParamSpec&)>(four_bit));
  // random() on the fp32 parameters; each 4-bit weight draws the same numbers (word 2j of
  // stream i for element j of parameter i) into a scratch tensor, quantized right away.
  std::vector<float> scratch;
  for (size_t i = 0; i < m.params_.all().size(); ++i) {
    const Parameter& p = m.params_.all()[i];
    const int64_t n = p.value.numel();
    float* dst = p.value.as<float>();
    if (four_bit(p.spec)) {
      scratch.resize(static_cast<size_t>(n));
      dst = scratch.data();
    }
    if (p.spec.role == ParamRole::kNorm) {
      std::fill(dst, dst + n, 1.0f);
    } else if (p.spec.role == ParamRole::kBias) {
      std::fill(dst, dst + n, 0.0f);
    } else {
      ops::parallel_for_rows(n, 1 << 16, [&](int64_t b, int64_t e) {
        Rng rng(seed, i);
        rng.set_position(static_cast<uint64_t>(2 * b));
        for (int64_t j = b; j < e; ++j) dst[j] = rng.normal() * std;
      });
    }
    if (four_bit(p.spec)) {
      Quant4Data q = quantize_for_plan(scratch, plan);
      m.params_.set_quant4(i, std::move(q.packed), std::move(q.absmax), plan.blocksize, plan.type);
    }
  }
  return m;
}

}  // namespace sft::model

namespace sft::model {

Transformer dequantized_model(const Transformer& m) {
  if (m.lora()) fail("quant", "dequantized_model: the model has LoRA adapters (merge them later)");
  Transformer out = Transformer::zeros(m.config());
  for (size_t i = 0; i < m.params().all().size(); ++i) {
    const Parameter& src = m.params().all()[i];
    Parameter& dst = out.params().all()[i];
    const auto n = static_cast<size_t>(dst.value.numel());
    if (src.is_4bit()) {
      const auto* packed = src.quant4.packed.as<uint8_t>();
      const float* absmax = src.quant4.absmax.as<float>();
      ops::cpu::dequantize_4bit({packed, static_cast<size_t>(src.quant4.packed.numel())},
                                {absmax, static_cast<size_t>(src.quant4.absmax.numel())},
                                src.quant4.blocksize, src.quant4.type, {dst.value.as<float>(), n});
    } else {
      if (!src.value.data)
        fail("quant", "dequantized_model: '" + src.spec.name + "' has no fp32 values");
      std::copy_n(src.value.as<float>(), n, dst.value.as<float>());
    }
  }
  return out;
}

}  // namespace sft::model
