// Transformer::load_4bit and random_4bit (transformer.h): QLoRA's frozen base built one tensor
// at a time, so the 4-bit weights never exist whole in fp32 (only the one being quantized), and
// the matrices a FrozenBaseForm holds in bf16 (model/frozen_base.h) only 4 MB of rows at a time.
#include <algorithm>
#include <cmath>
#include <functional>
#include <utility>
#include <vector>

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

// The storage of each parameter: 4-bit where `four_bit` says, bf16 where the form holds it so,
// else fp32.
std::function<ParamStorage(const ParamSpec&)> storage_of(
    std::function<bool(const ParamSpec&)> four_bit, const FrozenBaseForm& form) {
  return [four_bit = std::move(four_bit), &form](const ParamSpec& spec) {
    if (four_bit(spec)) return ParamStorage::k4Bit;
    return form.held_in_bf16(spec) ? ParamStorage::kBF16 : ParamStorage::kF32;
  };
}

// Fills a matrix held in bf16 a block of rows at a time: fill(first_row, rows, fp32 out) writes
// the block's values, which are then rounded into the bf16 view. So at most one block of the
// matrix (4 MB) is ever in fp32.
template <typename Fill>
void fill_bf16_rows(const Parameter& p, Fill&& fill) {
  const int64_t rows = p.bf16.rows, cols = p.bf16.cols;
  const int64_t block = std::max<int64_t>(1, (int64_t{4} << 20) / (cols * int64_t{sizeof(float)}));
  std::vector<float> scratch(static_cast<size_t>(std::min(block, rows) * cols));
  for (int64_t r = 0; r < rows; r += block) {
    const int64_t n = std::min(block, rows - r);
    fill(r, n, scratch.data());
    ops::cast(p.bf16.row_range(r, n), ops::view_of(scratch.data(), n, cols));
  }
}

}  // namespace

Transformer Transformer::load_4bit(const std::string& model_dir, const Quant4Plan& plan,
                                   const FrozenBaseForm& form) {
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
  Transformer m(dir.config, storage_of(four_bit, form));
  std::vector<float> scratch;  // one weight in fp32 at a time
  for (size_t i = 0; i < m.params_.all().size(); ++i) {
    const Parameter& p = m.params_.all()[i];
    const SafetensorsFile& file = ckpt.file_of(p.spec.name);
    const TensorEntry& entry = ckpt.entry(p.spec.name);
    if (stored_4bit(p.spec)) {
      Quant4Weight w = read_quant4_weight(file, p.spec.name);
      m.params_.set_quant4(i, std::move(w.packed), std::move(w.absmax), w.state.blocksize,
                           w.state.type);
    } else if (four_bit(p.spec)) {
      scratch.resize(static_cast<size_t>(p.value.numel()));
      read_block(file, entry, p.spec, scratch.data());
      Quant4Data q = quantize_for_plan(scratch, plan);
      m.params_.set_quant4(i, std::move(q.packed), std::move(q.absmax), plan.blocksize, plan.type);
    } else if (p.value.empty()) {  // held in bf16: read as rows of the stored tensor
      fill_bf16_rows(p, [&](int64_t first, int64_t n, float* out) {
        read_tensor_block(file, entry, {.dim = 0, .begin = first, .count = n},
                          {out, static_cast<size_t>(n * p.bf16.cols)});
      });
    } else {
      read_block(file, entry, p.spec, p.value.as<float>());
    }
    // Converted into the model's own memory (a stored 4-bit weight's parts included): the
    // file's pages of it need not stay resident beside that copy.
    file.release_pages(entry);
  }
  if (form.bf16_compute) m.set_compute_dtype(DType::kBF16);
  return m;
}

Transformer Transformer::random_4bit(const ModelConfig& config, uint64_t seed, float std,
                                     const Quant4Plan& plan, const FrozenBaseForm& form) {
  for (const ParamSpec& spec : parameter_layout(config))
    if (quantized_by_plan(spec, plan)) refuse_fused(spec, "random initialisation");
  auto four_bit = [&](const ParamSpec& spec) { return quantized_by_plan(spec, plan); };
  Transformer m(config, storage_of(four_bit, form));
  // random() on the fp32 parameters; each 4-bit weight draws the same numbers (word 2j of
  // stream i for element j of parameter i) into a scratch tensor, quantized right away, and
  // each matrix held in bf16 draws them a block of rows at a time, rounded right away.
  std::vector<float> scratch;
  for (size_t i = 0; i < m.params_.all().size(); ++i) {
    const Parameter& p = m.params_.all()[i];
    auto draw = [&](float* dst, int64_t first, int64_t n) {
      if (p.spec.role == ParamRole::kNorm) return std::fill(dst, dst + n, 1.0f);
      if (p.spec.role == ParamRole::kBias) return std::fill(dst, dst + n, 0.0f);
      ops::parallel_for_rows(n, 1 << 16, [&](int64_t b, int64_t e) {
        Rng rng(seed, i);
        rng.set_position(static_cast<uint64_t>(2 * (first + b)));
        for (int64_t j = b; j < e; ++j) dst[j] = rng.normal() * std;
      });
    };
    const int64_t n = p.value.numel();
    if (four_bit(p.spec)) {
      scratch.resize(static_cast<size_t>(n));
      draw(scratch.data(), 0, n);
      Quant4Data q = quantize_for_plan(scratch, plan);
      m.params_.set_quant4(i, std::move(q.packed), std::move(q.absmax), plan.blocksize, plan.type);
    } else if (p.value.empty()) {  // held in bf16
      const int64_t cols = p.bf16.cols;
      fill_bf16_rows(p, [&](int64_t first, int64_t rows, float* out) {
        draw(out, first * cols, rows * cols);
      });
    } else {
      draw(p.value.as<float>(), 0, n);
    }
  }
  if (form.bf16_compute) m.set_compute_dtype(DType::kBF16);
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
