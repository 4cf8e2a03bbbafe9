// ParameterSet: the model's trainable tensors as named views over three arenas — fp32 master
// values, fp32 gradients, and (under bf16 compute) bf16 copies of the matmul weights (an untied
// embedding is only looked up, in fp32: it has none) — with
// what optim, checkpoints and export need to know about each: its HF name and shape, its role
// (and so whether weight decay applies), and its offset in the flat arena (a ZeRO shard or a
// tensor-parallel slice is a range of those offsets).
//
// The flat spans are what the optimizer, clipping and gradient all-reduce work on; the views
// are what the model computes with. Gradients exist once allocate_grads() has run; the bf16
// copies once enable_bf16_copies() has run, and they are refreshed (refresh_bf16_copies) after
// every change of the master values.
//
// A rank of ZeRO-3 may hold only a run of the flat arenas (hold_only): what loads, draws and
// copies values then writes only there (model/held_values.h).
//
// A frozen base (LoRA's) may drop the fp32 form of its matrices: released once their bf16
// copies exist (release_fp32_matrices), or never made (QLoRA's constructor, ParamStorage:
// 4-bit weights, and matrices held in bf16 only, model/frozen_base.h). Such a matrix's `value`
// keeps its shape without data; its `bf16` view is what lookups and matmuls read.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/arena.h"
#include "core/param_slice.h"
#include "core/tensor.h"
#include "io/safetensors.h"
#include "model/param_layout.h"
#include "ops/quant4.h"
#include "ops/view.h"

namespace sft::model {

// How a frozen base's parameter is held from construction on (QLoRA's constructor): fp32
// values; bf16 only (model/frozen_base.h: the bf16 view is its one form, `value` keeps its shape
// without data, as after release_fp32_matrices); or 4-bit (set_quant4 fills it in).
enum class ParamStorage { kF32, kBF16, k4Bit };

// Elements [begin, end) of one parameter (row-major), or of the flat arena.
struct ElementRun {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
  bool empty() const { return end <= begin; }
};

// Rank `rank`'s share of the flat arena split evenly over `ranks`: elements [n·rank / ranks,
// n·(rank + 1) / ranks), the rule of parallel/comm.h's shard_of, so it is the shard ZeRO-3
// gives that rank of its data-parallel group (the trainer checks that they agree).
struct ArenaShard {
  int rank = 0, ranks = 1;
  bool whole() const { return ranks <= 1; }
  ElementRun of(int64_t n) const {
    const auto r = static_cast<__int128>(rank), s = static_cast<__int128>(ranks);
    return {static_cast<int64_t>(n * r / s), static_cast<int64_t>(n * (r + 1) / s)};
  }
};

struct Parameter {
  ParamSpec spec;
  int64_t offset = 0;  // elements into the flat arenas
  ops::View value;     // fp32 master weights, (rows, cols) = shape, vectors as (1, n)
  ops::View grad;      // fp32; empty until allocate_grads()
  ops::View bf16;      // bf16 copy for matmuls (or a frozen matrix's only form); else empty
  bool decay = true;   // weight decay applies
  // A frozen 4-bit base (QLoRA, ops/quant4.h): Linear multiplies it, dequantized a panel at a
  // time, instead of value / bf16. Empty (no packed bytes) for every other parameter.
  ops::Weight4Bit quant4;
  bool is_4bit() const { return !quant4.packed.empty(); }
};

class ParameterSet {
 public:
  explicit ParameterSet(const std::vector<ParamSpec>& layout, Device device = Device::kCpu);
  // QLoRA's frozen base, each parameter held as `storage` says: kF32 ones in a compact fp32
  // arena, kBF16 ones in a bf16 arena of their own (to be written through their bf16 views),
  // k4Bit ones nowhere until set_quant4 gives them their 4-bit form. So neither the 4-bit
  // weights nor the matrices held in bf16 ever exist whole in fp32.
  ParameterSet(const std::vector<ParamSpec>& layout,
               const std::function<ParamStorage(const ParamSpec&)>& storage);
  ParameterSet(ParameterSet&&) = default;
  ParameterSet& operator=(ParameterSet&&) = default;

  std::span<Parameter> all() { return params_; }
  std::span<const Parameter> all() const { return params_; }
  const Parameter& at(ParamSlot slot, int layer = -1) const;
  const Parameter* find(ParamSlot slot, int layer = -1) const;
  const Parameter& named(const std::string& name) const;

  int64_t numel() const { return numel_; }
  // Where the arenas live (the views name it; spans over a device's arenas are device memory).
  Device device() const { return values_.device(); }
  // The fp32 values of `other` (the same layout, on any device) copied into this set's arena:
  // how a model loaded on the host reaches the device.
  void copy_values_from(const ParameterSet& other);
  // A set of the same layout on `device` holding these fp32 values, with bf16 copies (rounded
  // there from the values) and zero gradients where this set has them: what to_device moves.
  ParameterSet copy_on(Device device) const;
  std::span<float> values() {
    check_fp32_whole("values");
    return {reinterpret_cast<float*>(values_.data()), size()};
  }
  std::span<const float> values() const {
    check_fp32_whole("values");
    return {reinterpret_cast<const float*>(values_.data()), size()};
  }
  std::span<float> grads() { return {reinterpret_cast<float*>(grads_.data()), grads_size()}; }
  std::span<const float> grads() const {
    return {reinterpret_cast<const float*>(grads_.data()), grads_size()};
  }
  bool has_grads() const { return grads_.capacity() > 0; }
  // ZeRO-3 (optim/zero3.h): this rank holds only `run` of the flat arenas. The loads, the random
  // init (model/held_values.h) and the bf16 copies write only inside it; the rest stays zero,
  // its pages never touched, until the trainer gathers what a pass uses. Set right after
  // construction, before any value is written; the whole arena by default.
  void hold_only(ElementRun run);
  ElementRun held() const { return held_; }
  bool holds_all() const { return held_.begin == 0 && held_.end == numel_; }
  // The elements of `p` inside held() (offsets into p; empty when it holds none of them).
  ElementRun held_part(const Parameter& p) const;

  // Runs of the flat arena with their weight-decay flag, for AdamW.
  std::vector<ParamSlice> decay_slices() const;

  void allocate_grads();
  void zero_grads();

  // Copies of the matmul weights that have fp32 values (those held in bf16 need none).
  void enable_bf16_copies();
  bool has_bf16_copies() const { return copies_; }
  void refresh_bf16_copies();
  // For a frozen set computed in bf16 (a LoRA base): frees the fp32 values of every matmul
  // weight, except those `keep_fp32` names (an embedding table looked up in fp32), in place:
  // their pages go back to the OS (core/page_release.h), the kept values stay where they are.
  // Without bf16 copies yet it makes them (an untied embedding's too when it is released), each
  // block of rows released as soon as its copy is written, so no matrix is ever whole in both
  // forms. Host sets without gradients only. Afterwards a released weight's `value` has its
  // shape but no data, and values(), named_values() and refresh_bf16_copies() fail (nothing may
  // read or change the fp32 master any more).
  void release_fp32_matrices(const std::function<bool(const ParamSpec&)>& keep_fp32);
  bool fp32_released() const { return fp32_released_; }
  // The bf16 arena (same offsets as values(), room for every parameter; only matmul weights
  // have views into it), for an optimizer that writes the copies itself; null without copies.
  // A set with 4-bit bases or matrices held in bf16 packs its bf16 copies densely instead (no
  // arena to offer): null.
  uint16_t* bf16_arena() {
    return has_bf16_copies() && !dense_bf16() ? reinterpret_cast<uint16_t*>(bf16_.data()) : nullptr;
  }

  // QLoRA: parameter `index` of all() becomes a frozen 4-bit base (Parameter::quant4) whose
  // bytes the set owns; matmuls read those instead of value / bf16 (model/linear.cpp).
  void set_quant4(size_t index, std::vector<uint8_t> packed, std::vector<float> absmax,
                  int64_t blocksize, ops::Quant4Type type);
  bool has_4bit() const { return !quant4_packed_.empty(); }

  // Borrowed views under HF names, for checkpoints and export.
  std::vector<NamedTensor> named_values() const;
  std::vector<NamedTensor> named_grads() const;

 private:
  size_t size() const { return static_cast<size_t>(numel_); }
  size_t grads_size() const { return has_grads() ? size() : 0; }

  void check_fp32_whole(const char* what) const;
  bool dense_bf16() const { return has_4bit() || held_bf16_.capacity() > 0; }
  // The bf16 arena and each copied matrix's view into it, nothing written yet; an untied
  // embedding gets one only with `embedding_too` (it is otherwise looked up in fp32).
  void allocate_bf16_copies(bool embedding_too);
  // Writes the copies of the matrices that have fp32 values.
  void write_bf16_copies();
  // The row blocks of fused tensors (Phi-3's qkv_proj: q, k, v; gate_up_proj: gate, up) as
  // parameters of their own slots, so the blocks bind them as separate projections that share
  // the fused tensor's storage (no copy, and consecutive rows: StackedLinear stacks them back).
  // Not in all(): optimizers, checkpoints and export see the fused tensor once. Rebuilt in
  // place whenever the views change, so pointers to them stay valid.
  void bind_parts();

  std::vector<Parameter> params_;
  std::vector<Parameter> parts_;
  int64_t numel_ = 0;
  ElementRun held_;  // the whole arena unless hold_only
  Arena values_, grads_, bf16_;
  Arena held_bf16_;  // the matrices held in bf16 only (ParamStorage::kBF16), back to back
  bool copies_ = false;
  bool fp32_released_ = false;
  // The 4-bit bases' bytes (set_quant4); moving the set keeps their buffers, so views stay.
  std::vector<std::vector<uint8_t>> quant4_packed_;
  std::vector<std::vector<float>> quant4_absmax_;
};

}  // namespace sft::model
