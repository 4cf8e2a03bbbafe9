// Stacked experts ↔ per-expert checkpoint tensors. See moe_checkpoint.h.
#include "model/moe_checkpoint.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <optional>
#include <span>
#include <string>

#include "model/held_values.h"
#include "model/mxfp4.h"
#include "model/param_slices.h"
#include "ops/ops.h"

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

// gate_up's sft row r (gate rows, then up rows) as a column on disk: gate i at 2i, up i at 2i + 1.
int64_t interleaved_column(int64_t r, int64_t I) {
  return r < I ? 2 * r : 2 * (r - I) + 1;
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
      for (int64_t r = 0; r < rows; ++r) f(e * rows + r, e * rows + interleaved_column(r, I));
    return;
  }
  const int64_t cols = p.shape[2];
  for (int64_t e = 0; e < E; ++e) {
    for (int64_t r = 0; r < rows; ++r) {
      // gate_up: sft row r is the gate's (r < I) or the up's; on disk a column of (C, 2I).
      const int64_t I = rows / 2;
      const int64_t column = p.slot == ParamSlot::kExpertsGateUp ? interleaved_column(r, I)
                                                                 : r;  // down: (I, C) → (C, I)
      for (int64_t c = 0; c < cols; ++c)
        f((e * rows + r) * cols + c, (e * cols + c) * rows + column);
    }
  }
}

// An MXFP4 checkpoint's stack (config.experts_mxfp4, mxfp4.h) stored as its _blocks/_scales
// pair, which a checkpoint holding the plain name does not use.
bool stored_mxfp4(const ParamSpec& p, const SafetensorsCheckpoint& ckpt,
                  const ModelConfig& config) {
  return config.experts_mxfp4 && is_stack(p) && !ckpt.contains(p.name);
}

// Every pair a stored tensor's name is part of: both halves present, as mxfp4.h describes.
void check_mxfp4_pairs(const SafetensorsCheckpoint& ckpt) {
  for (const std::string& name : ckpt.names()) {
    for (const char* stack : {"experts.gate_up_proj", "experts.down_proj"}) {
      const std::string blocks_suffix = mxfp4_blocks_name(stack);
      const std::string scales_suffix = mxfp4_scales_name(stack);
      const bool is_blocks = name.ends_with(blocks_suffix),
                 is_scales = name.ends_with(scales_suffix);
      if (!is_blocks && !is_scales) continue;
      const std::string base =
          name.substr(0, name.size() - (is_blocks ? blocks_suffix : scales_suffix).size()) + stack;
      const std::string blocks = mxfp4_blocks_name(base), scales = mxfp4_scales_name(base);
      const std::string& partner = is_blocks ? scales : blocks;
      if (!ckpt.contains(partner))
        fail_in_file(
            "model", {ckpt.file_of(name).path(), "tensor '" + name + "'"},
            "has no '" + partner + "' beside it: MXFP4 needs both to decode '" + base + "'",
            "the checkpoint is incomplete; download the folder again");
      if (is_scales) continue;  // checked once, from its blocks
      check_mxfp4_pair({ckpt.entry(blocks), ckpt.file_of(blocks).path(), ckpt.entry(scales),
                        ckpt.file_of(scales).path()});
    }
  }
}

// Decodes `p`'s pair into sft's stack `value` (E, R, K): row r of expert e is the pair's row
// interleaved_column(r) for gate_up (a column of the (E, C, 2I) tensor transformers makes),
// row r for down_proj. Fails naming the first block that decodes to inf.
void load_mxfp4_stack(const SafetensorsCheckpoint& ckpt, const ParamSpec& p, float* value) {
  const std::string blocks_name = mxfp4_blocks_name(p.name);
  const std::string scales_name = mxfp4_scales_name(p.name);
  const Tensor blocks = ckpt.tensor(blocks_name), scales = ckpt.tensor(scales_name);
  const auto* block_bytes = reinterpret_cast<const uint8_t*>(blocks.bytes());
  const auto* scale_bytes = reinterpret_cast<const uint8_t*>(scales.bytes());
  const int64_t E = p.shape[0], R = p.shape[1], K = p.shape[2];
  const int64_t G = K / kMxfp4BlockValues;  // shapes checked by the caller (checkpoint_layout)
  const bool gate_up = p.slot == ParamSlot::kExpertsGateUp;
  auto decode = [&](int64_t row, float* out) {  // row = e * R + r of sft's stack
    const int64_t e = row / R, r = row % R;
    const int64_t stored = e * R + (gate_up ? interleaved_column(r, R / 2) : r);
    return decode_mxfp4_row(
        {block_bytes + stored * G * kMxfp4BlockBytes, static_cast<size_t>(G * kMxfp4BlockBytes)},
        {scale_bytes + stored * G, static_cast<size_t>(G)}, {out, static_cast<size_t>(K)});
  };
  std::atomic<int64_t> first_bad{E * R};
  ops::parallel_for_rows(E * R, 64, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row)
      if (decode(row, value + row * K) >= 0) {
        int64_t seen = first_bad.load();
        while (row < seen && !first_bad.compare_exchange_weak(seen, row)) {
        }
        break;  // a later row of this chunk cannot come first
      }
  });
  if (first_bad.load() == E * R) return;
  const int64_t row = first_bad.load(), e = row / R;
  const int64_t stored_row = gate_up ? interleaved_column(row % R, R / 2) : row % R;
  const int64_t g = decode(row, value + row * K) / kMxfp4BlockValues;
  const uint8_t s = scale_bytes[(e * R + stored_row) * G + g];
  fail_in_file("model",
               {ckpt.file_of(blocks_name).path(),
                "tensor '" + blocks_name + "', expert " + std::to_string(e) + ", row " +
                    std::to_string(stored_row) + ", block " + std::to_string(g)},
               "decodes to inf (scale byte " + std::to_string(s) + " is 2^" +
                   std::to_string(static_cast<int>(s) - 127) + (s == 255 ? ", E8M0's NaN" : "") +
                   "): not weights one can train",
               "the checkpoint is damaged; download it again");
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
  if (config.experts_mxfp4) check_mxfp4_pairs(ckpt);
  const std::span<const NameRule> rules = rules_of(config.experts_on_disk);
  if (!config.has_experts() || rules.empty()) return ckpt;
  return SafetensorsCheckpoint::renamed(
      std::move(ckpt), [&](const std::string& name) { return renamed(name, rules, false); });
}

std::string name_on_disk(const std::string& name, const ModelConfig& config) {
  return config.has_experts() ? renamed(name, rules_of(config.experts_on_disk), true) : name;
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
    if (stored_mxfp4(p, ckpt, config)) {
      const int64_t E = p.shape[0], R = p.shape[1], K = p.shape[2];
      for (const auto& [name, shape] :
           {std::pair{mxfp4_blocks_name(p.name), mxfp4_blocks_shape(E, R, K)},
            std::pair{mxfp4_scales_name(p.name), mxfp4_scales_shape(E, R, K)}}) {
        ParamSpec q = p;
        q.name = name;
        q.shape = q.full_shape = shape;
        out.push_back(std::move(q));
      }
      continue;
    }
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
  // Only the held part of the arena (model/held_values.h): a ZeRO-3 rank's shard.
  write_held_values(
      params, through_scratch([&](size_t, const Parameter& p, float* value) {
        if (stored_mxfp4(p.spec, ckpt, config)) {
          load_mxfp4_stack(ckpt, p.spec, value);
          return;
        }
        if (converted_on_disk(p.spec, config)) {  // shape checked by the caller (checkpoint_layout)
          const std::vector<float> stored = ckpt.tensor(p.spec.name).to_f32_vector();
          for_each_disk_index(p.spec, [&](int64_t k, int64_t d) { value[k] = stored[d]; });
          return;
        }
        if (!is_stack(p.spec)) {
          read_block(ckpt.file_of(p.spec.name), ckpt.entry(p.spec.name), p.spec, value);
          return;
        }
        if (ckpt.contains(p.spec.name)) {
          // Stored stacked (E, rows, cols; shape checked by the caller): the block readers take
          // 1-D and 2-D tensors only, so one whole copy in f32.
          const std::vector<float> whole = ckpt.tensor(p.spec.name).to_f32_vector();
          std::copy(whole.begin(), whole.end(), value);
          return;
        }
        for (const ExpertPiece& piece : pieces_of(p.spec)) {
          const TensorEntry& entry = ckpt.entry(piece.name);
          read_tensor_block(ckpt.file_of(piece.name), entry, whole_tensor_block(entry),
                            {value + piece.offset, static_cast<size_t>(shape_numel(piece.shape))});
        }
      }));
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
