// ParameterSet: layout of the arenas and the views into them. See parameters.h.
#include "model/parameters.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "core/page_release.h"
#include "ops/ops.h"

namespace sft::model {

namespace {

// (rows, cols) of a parameter: matrices as stored, vectors as one row, a stack of matrices
// (the experts' (E, O, I)) as its matrices one under the other, (E·O, I).
std::pair<int64_t, int64_t> matrix_shape(const Shape& s) {
  if (s.size() == 2) return {s[0], s[1]};
  if (s.size() == 3) return {s[0] * s[1], s[2]};
  return {1, shape_numel(s)};
}

bool is_matmul_weight(const ParamSpec& p) {
  return (p.shape.size() == 2 || p.shape.size() == 3) && p.role != ParamRole::kNorm &&
         p.role != ParamRole::kBias;
}

}  // namespace

ParameterSet::ParameterSet(const std::vector<ParamSpec>& layout, Device device)
    : values_(device), grads_(device), bf16_(device) {
  // Packed back to back in layout order: the flat arena is the concatenation that optimizer
  // moments and checkpoints use.
  for (const ParamSpec& spec : layout) {
    Parameter p;
    p.spec = spec;
    p.offset = numel_;
    p.decay = weight_decay_applies(spec.role);
    numel_ += shape_numel(spec.shape);
    params_.push_back(std::move(p));
  }
  values_.reserve(size() * sizeof(float));
  float* base = reinterpret_cast<float*>(values_.data());
  for (Parameter& p : params_) {
    const auto [rows, cols] = matrix_shape(p.spec.shape);
    p.value = ops::view_of(base + p.offset, rows, cols, device);
  }
  held_ = {0, numel_};
  bind_parts();
}

ParameterSet ParameterSet::copy_on(Device device) const {
  std::vector<ParamSpec> layout;
  layout.reserve(params_.size());
  for (const Parameter& p : params_) layout.push_back(p.spec);
  ParameterSet copy(layout, device);
  copy.copy_values_from(*this);
  if (has_bf16_copies()) copy.enable_bf16_copies();
  if (has_grads()) copy.allocate_grads();  // zero-filled: the next step accumulates afresh
  return copy;
}

ParameterSet::ParameterSet(const std::vector<ParamSpec>& layout,
                           const std::function<ParamStorage(const ParamSpec&)>& storage)
    : values_(Device::kCpu), grads_(Device::kCpu), bf16_(Device::kCpu) {
  std::vector<ParamStorage> held;
  int64_t f32 = 0, bf16 = 0;
  for (const ParamSpec& spec : layout) {
    Parameter p;
    p.spec = spec;
    p.offset = numel_;
    p.decay = weight_decay_applies(spec.role);
    numel_ += shape_numel(spec.shape);
    held.push_back(storage(spec));
    if (held.back() == ParamStorage::kBF16 && !is_matmul_weight(spec))
      fail("model", "'" + spec.name + "' is not a matrix, so it cannot be held in bf16 only");
    if (held.back() == ParamStorage::kF32) f32 += shape_numel(spec.shape);
    if (held.back() == ParamStorage::kBF16) bf16 += shape_numel(spec.shape);
    params_.push_back(std::move(p));
  }
  // Each form's tensors back to back: the compact arenas release_fp32_matrices would leave.
  values_.reserve(static_cast<size_t>(f32) * sizeof(float));
  held_bf16_.reserve(static_cast<size_t>(bf16) * sizeof(uint16_t));
  float* next = reinterpret_cast<float*>(values_.data());
  uint16_t* next16 = reinterpret_cast<uint16_t*>(held_bf16_.data());
  for (size_t i = 0; i < params_.size(); ++i) {
    Parameter& p = params_[i];
    const auto [rows, cols] = matrix_shape(p.spec.shape);
    p.value = ops::view_of(held[i] == ParamStorage::kF32 ? next : nullptr, rows, cols);
    if (held[i] == ParamStorage::kF32) next += p.value.numel();
    if (held[i] == ParamStorage::kBF16) {
      p.bf16 = ops::view_of(next16, rows, cols);
      next16 += p.bf16.numel();
    }
  }
  fp32_released_ = f32 != numel_;
  held_ = {0, numel_};
  bind_parts();
}

void ParameterSet::set_quant4(size_t index, std::vector<uint8_t> packed, std::vector<float> absmax,
                              int64_t blocksize, ops::Quant4Type type) {
  Parameter& p = params_.at(index);
  if (p.spec.shape.size() != 2 || !p.bf16.empty() || !p.grad.empty())
    fail("model", "set_quant4: '" + p.spec.name +
                      "' must be a matrix without bf16 copy or gradient to become 4-bit");
  const int64_t n = p.value.numel();
  if (static_cast<int64_t>(packed.size()) != (n + 1) / 2 ||
      static_cast<int64_t>(absmax.size()) != (n + blocksize - 1) / blocksize)
    fail("model", "set_quant4: '" + p.spec.name + "' got " + std::to_string(packed.size()) +
                      " bytes and " + std::to_string(absmax.size()) + " absmax for " +
                      std::to_string(n) + " elements");
  quant4_packed_.push_back(std::move(packed));
  quant4_absmax_.push_back(std::move(absmax));
  std::vector<uint8_t>& bytes = quant4_packed_.back();
  std::vector<float>& scales = quant4_absmax_.back();
  p.quant4.packed = ops::view_of(bytes.data(), 1, static_cast<int64_t>(bytes.size()));
  p.quant4.absmax = ops::view_of(scales.data(), 1, static_cast<int64_t>(scales.size()));
  p.quant4.rows = p.value.rows;
  p.quant4.cols = p.value.cols;
  p.quant4.blocksize = blocksize;
  p.quant4.type = type;
}

void ParameterSet::bind_parts() {
  struct Block {
    ParamSlot fused, part;
    int index, of;  // the part is block `index` of the fused rows split as (Q, KV, KV) or (I, I)
  };
  static constexpr Block kBlocks[] = {{ParamSlot::kQKV, ParamSlot::kQ, 0, 3},
                                      {ParamSlot::kQKV, ParamSlot::kK, 1, 3},
                                      {ParamSlot::kQKV, ParamSlot::kV, 2, 3},
                                      {ParamSlot::kGateUp, ParamSlot::kGate, 0, 2},
                                      {ParamSlot::kGateUp, ParamSlot::kUp, 1, 2}};
  const bool fresh = parts_.empty();
  size_t next = 0;
  for (const Parameter& f : params_) {
    for (const Block& b : kBlocks) {
      if (f.spec.slot != b.fused) continue;
      // qkv_proj: q's rows (spec.fused_q_rows), then k's and v's, as many each; gate_up: halves.
      const int64_t rows = f.value.rows, cols = f.value.cols;
      int64_t begin = b.index * (rows / 2), n = rows / 2;
      if (b.of == 3) {
        const int64_t q = f.spec.fused_q_rows, kv = (rows - q) / 2;
        begin = b.index == 0 ? 0 : q + (b.index - 1) * kv;
        n = b.index == 0 ? q : kv;
      }
      if (fresh) parts_.emplace_back();
      Parameter& p = parts_.at(next++);
      p.spec = f.spec;
      p.spec.slot = b.part;
      p.spec.shape = {n, cols};
      p.offset = f.offset + begin * cols;
      p.decay = f.decay;
      if (f.value.data == nullptr) {  // released fp32 (release_fp32_matrices): the shape stays
        p.value = f.value.first(n, cols);
      } else {
        p.value = f.value.row_range(begin, n);
      }
      p.grad = f.grad.empty() ? ops::View{} : f.grad.row_range(begin, n);
      p.bf16 = f.bf16.empty() ? ops::View{} : f.bf16.row_range(begin, n);
    }
  }
}

const Parameter* ParameterSet::find(ParamSlot slot, int layer) const {
  for (const Parameter& p : params_)
    if (p.spec.slot == slot && p.spec.layer == layer) return &p;
  for (const Parameter& p : parts_)
    if (p.spec.slot == slot && p.spec.layer == layer) return &p;
  return nullptr;
}

const Parameter& ParameterSet::at(ParamSlot slot, int layer) const {
  const Parameter* p = find(slot, layer);
  if (!p)
    fail("model", "no parameter for slot " + std::to_string(static_cast<int>(slot)) + " of layer " +
                      std::to_string(layer));
  return *p;
}

const Parameter& ParameterSet::named(const std::string& name) const {
  for (const Parameter& p : params_)
    if (p.spec.name == name) return p;
  fail("model", "no parameter named '" + name + "'");
}

std::vector<ParamSlice> ParameterSet::decay_slices() const {
  std::vector<ParamSlice> out;
  for (const Parameter& p : params_)
    out.push_back({static_cast<size_t>(p.offset), static_cast<size_t>(p.value.numel()), p.decay});
  return out;
}

void ParameterSet::allocate_grads() {
  if (has_grads()) return;
  grads_.reserve(size() * sizeof(float));
  float* base = reinterpret_cast<float*>(grads_.data());
  for (Parameter& p : params_) {
    p.grad = p.value;
    p.grad.data = base + p.offset;
  }
  bind_parts();
}

void ParameterSet::zero_grads() {
  if (!has_grads()) return allocate_grads();  // a fresh arena is zero-filled
  grads_.zero(size() * sizeof(float));
}

void ParameterSet::copy_values_from(const ParameterSet& other) {
  check_fp32_whole("copy_values_from");
  other.check_fp32_whole("copy_values_from");
  if (other.numel_ != numel_ || other.params_.size() != params_.size())
    fail("model", "copy_values_from: a parameter set of " + std::to_string(other.numel_) +
                      " values into one of " + std::to_string(numel_));
  copy_bytes(values_.data(), device(), other.values_.data(), other.device(),
             size() * sizeof(float));
  if (has_bf16_copies()) refresh_bf16_copies();
}

void ParameterSet::enable_bf16_copies() {
  if (has_bf16_copies()) return;
  allocate_bf16_copies(false);
  write_bf16_copies();
}

void ParameterSet::allocate_bf16_copies(bool embedding_too) {
  // 4-bit bases have no bf16 copy (matmul_4bit dequantizes into bf16 itself), nor do matrices
  // held in bf16 (their view is their storage); with either the copies of the rest are packed
  // densely, since offsets span the whole model. An untied embedding is only looked up (in
  // fp32), never a matmul operand: no copy for it unless its fp32 values are to go.
  const bool tied = std::none_of(params_.begin(), params_.end(), [](const Parameter& p) {
    return p.spec.slot == ParamSlot::kLmHead;
  });
  auto copied = [&](const Parameter& p) {
    return is_matmul_weight(p.spec) && !p.is_4bit() && p.bf16.empty() &&
           (tied || embedding_too || p.spec.slot != ParamSlot::kEmbed);
  };
  const bool dense = dense_bf16();
  int64_t count = 0;
  for (const Parameter& p : params_)
    if (copied(p)) count += p.value.numel();
  bf16_.reserve((dense ? static_cast<size_t>(count) : size()) * sizeof(uint16_t));
  uint16_t* base = reinterpret_cast<uint16_t*>(bf16_.data());
  uint16_t* next = base;
  for (Parameter& p : params_) {
    if (!copied(p)) continue;
    uint16_t* at = dense ? next : base + p.offset;
    next += p.value.numel();
    p.bf16 = ops::view_of(at, p.value.rows, p.value.cols, p.value.device);
  }
  copies_ = true;
  bind_parts();
}

void ParameterSet::hold_only(ElementRun run) {
  if (run.begin < 0 || run.end > numel_ || run.empty())
    fail("model", "hold_only: the run [" + std::to_string(run.begin) + ", " +
                      std::to_string(run.end) + ") is not inside the " + std::to_string(numel_) +
                      " parameters");
  if (fp32_released_ || copies_ || has_grads() || dense_bf16())
    fail("model", "hold_only: only a fresh fp32 parameter set can hold a run of its arena");
  held_ = run;
}

ElementRun ParameterSet::held_part(const Parameter& p) const {
  const int64_t n = p.value.numel();
  return {std::clamp(held_.begin - p.offset, int64_t{0}, n),
          std::clamp(held_.end - p.offset, int64_t{0}, n)};
}

// Each copy from its master's held part (all of it unless hold_only): the rest of the bf16
// arena stays untouched, as the values' does.
void ParameterSet::write_bf16_copies() {
  for (const Parameter& p : params_) {
    if (p.bf16.empty() || !p.value.data) continue;
    if (holds_all()) {
      ops::cast(p.bf16, p.value);
      continue;
    }
    const ElementRun part = held_part(p);
    if (part.empty()) continue;
    ops::cast(ops::view_of(p.bf16.as<uint16_t>() + part.begin, 1, part.size(), p.bf16.device),
              ops::view_of(p.value.as<float>() + part.begin, 1, part.size(), p.value.device));
  }
}

void ParameterSet::check_fp32_whole(const char* what) const {
  if (fp32_released_)
    fail("model", std::string(what) +
                      ": the fp32 values of this parameter set's matrices were released (a "
                      "frozen base kept in bf16 only); only its bf16 copies remain");
}

void ParameterSet::release_fp32_matrices(const std::function<bool(const ParamSpec&)>& keep_fp32) {
  if (has_grads()) fail("model", "release_fp32_matrices needs a set without gradients");
  if (values_.device() != Device::kCpu)
    fail("model", std::string("release_fp32_matrices on the ") + device_name(values_.device()) +
                      " device (a frozen base is kept in bf16 only on the host)");
  // In place, a block of rows at a time: the copy's rows are written (when the copies are made
  // here), then the fp32 pages they came from go back to the OS. The copies' pages fill in only
  // as they are written (core/arena.cpp), so a matrix never exists whole in both forms, and no
  // second fp32 arena is made for the kept values (at the Qwen3-8B shape either would add
  // 1.2–2.5 GB to the peak).
  const bool fresh = !has_bf16_copies();
  if (fresh) {
    const Parameter* embed = find(ParamSlot::kEmbed);
    allocate_bf16_copies(embed && !keep_fp32(embed->spec));
  }
  constexpr int64_t kBlockBytes = int64_t{4} << 20;
  for (Parameter& p : params_) {
    if (p.bf16.empty() || p.value.data == nullptr) continue;  // no copy, or released before
    const bool release = !keep_fp32(p.spec);
    if (!fresh && !release) continue;
    const int64_t rows = p.value.rows, cols = p.value.cols;
    const int64_t block = std::max<int64_t>(1, kBlockBytes / (cols * int64_t{sizeof(float)}));
    for (int64_t r = 0; r < rows; r += block) {
      const int64_t n = std::min(block, rows - r);
      if (fresh) ops::cast(p.bf16.row_range(r, n), p.value.row_range(r, n));
      if (release)
        zero_and_release(p.value.row_range(r, n).data,
                         static_cast<size_t>(n * cols) * sizeof(float));
    }
    if (release) p.value.data = nullptr;  // the shape stays (Linear reads its features from it)
  }
  fp32_released_ = true;
  bind_parts();
}

void ParameterSet::refresh_bf16_copies() {
  for (const Parameter& p : params_)
    if (!p.bf16.empty() && !p.value.data) check_fp32_whole("refresh_bf16_copies");  // gone
  write_bf16_copies();
}

std::vector<NamedTensor> ParameterSet::named_values() const {
  check_fp32_whole("named_values");
  std::vector<NamedTensor> out;
  for (const Parameter& p : params_)
    out.push_back({p.spec.name, Tensor::borrow(DType::kF32, p.spec.shape, p.value.data, nullptr)});
  return out;
}

std::vector<NamedTensor> ParameterSet::named_grads() const {
  std::vector<NamedTensor> out;
  if (!has_grads()) return out;
  for (const Parameter& p : params_)
    out.push_back({p.spec.name, Tensor::borrow(DType::kF32, p.spec.shape, p.grad.data, nullptr)});
  return out;
}

}  // namespace sft::model
