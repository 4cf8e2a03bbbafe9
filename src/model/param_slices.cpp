// Whole tensors ↔ tensor-parallel slices. See param_slices.h.
#include "model/param_slices.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "model/held_values.h"

namespace sft::model {

namespace {

// (rows, cols) of a 1-D or 2-D shape, 1-D as one row; a 3-D stack (the experts', never split)
// as its matrices one under the other.
struct Extent {
  int64_t rows, cols;
};
Extent extent(const Shape& s) {
  if (s.size() == 3) return {s[0] * s[1], s[2]};
  return s.size() == 1 ? Extent{1, s[0]} : Extent{s[0], s[1]};
}
// The split dimension in (rows, cols) terms: a 1-D tensor's dim 0 is its columns.
bool splits_columns(const ParamSpec& spec) {
  return spec.tp_dim == 1 || (spec.tp_dim == 0 && spec.shape.size() == 1);
}

}  // namespace

void copy_block(const ParamSpec& spec, const float* full, float* local) {
  const Extent l = extent(spec.shape), f = extent(spec.whole_shape());
  const int64_t real = spec.tp_real();
  if (spec.tp_dim < 0) {
    std::memcpy(local, full, static_cast<size_t>(l.rows * l.cols) * sizeof(float));
  } else if (splits_columns(spec)) {
    for (int64_t r = 0; r < l.rows; ++r) {
      std::memcpy(local + r * l.cols, full + r * f.cols + spec.tp_begin,
                  static_cast<size_t>(real) * sizeof(float));
      std::fill(local + r * l.cols + real, local + (r + 1) * l.cols, 0.0f);
    }
  } else {
    std::memcpy(local, full + spec.tp_begin * f.cols,
                static_cast<size_t>(real * l.cols) * sizeof(float));
    std::fill(local + real * l.cols, local + l.rows * l.cols, 0.0f);
  }
}

void gather_blocks(const ParamSpec& spec, const float* local, float* full, ShardGroup& group) {
  const Extent l = extent(spec.shape), f = extent(spec.whole_shape());
  const size_t n = static_cast<size_t>(l.rows * l.cols);
  if (spec.tp_dim < 0) {
    std::memcpy(full, local, n * sizeof(float));
    return;
  }
  const size_t ranks = static_cast<size_t>(group.size()), me = static_cast<size_t>(group.rank());
  const size_t whole = static_cast<size_t>(f.rows * f.cols);
  if (!splits_columns(spec) || l.rows == 1) {  // the blocks are contiguous in the whole tensor
    if (n * ranks == whole) {
      std::memcpy(full + me * n, local, n * sizeof(float));
      group.gather({full, n * ranks});
      return;
    }
    // A padded split: the padding is the tail of the blocks laid end to end.
    std::vector<float> blocks(n * ranks);
    std::memcpy(blocks.data() + me * n, local, n * sizeof(float));
    group.gather(blocks);
    std::memcpy(full, blocks.data(), whole * sizeof(float));
    return;
  }
  // Column blocks: gathered rank-major, then interleaved row by row (each rank's real columns).
  std::vector<float> blocks(n * ranks);
  std::memcpy(blocks.data() + me * n, local, n * sizeof(float));
  group.gather(blocks);
  for (size_t k = 0; k < ranks; ++k) {
    const int64_t first = static_cast<int64_t>(k) * l.cols;
    const int64_t real = std::clamp<int64_t>(f.cols - first, 0, l.cols);
    for (int64_t r = 0; r < l.rows; ++r)
      std::memcpy(full + r * f.cols + first,
                  blocks.data() + k * n + static_cast<size_t>(r * l.cols),
                  static_cast<size_t>(real) * sizeof(float));
  }
}

TensorBlock block_of(const ParamSpec& spec) {
  if (spec.tp_dim < 0) return {0, 0, spec.shape[0]};
  const int64_t real = spec.tp_real();
  // A block all padding (a tiny vocabulary over many ranks) reads nothing, from the end.
  const int64_t whole = spec.whole_shape()[static_cast<size_t>(spec.tp_dim)];
  return {spec.tp_dim, std::min(spec.tp_begin, whole), real};
}

void read_block(const SafetensorsFile& file, const TensorEntry& entry, const ParamSpec& spec,
                float* local) {
  const size_t n = static_cast<size_t>(shape_numel(spec.shape));
  const TensorBlock block = block_of(spec);
  if (spec.tp_dim < 0 || block.count == spec.shape[static_cast<size_t>(spec.tp_dim)])
    return read_tensor_block(file, entry, block, {local, n});
  // A padded block: the file's part, then zeros.
  const Extent l = extent(spec.shape);
  if (!splits_columns(spec) || l.rows == 1) {  // the file's part is a prefix of the block
    const bool rows = spec.tp_dim == 0 && spec.shape.size() == 2;
    const size_t real = static_cast<size_t>(rows ? block.count * l.cols : block.count);
    read_tensor_block(file, entry, block, {local, real});
    std::fill(local + real, local + n, 0.0f);
    return;
  }
  std::vector<float> part(static_cast<size_t>(l.rows * block.count));
  read_tensor_block(file, entry, block, part);
  for (int64_t r = 0; r < l.rows; ++r) {
    std::copy_n(part.data() + r * block.count, block.count, local + r * l.cols);
    std::fill(local + r * l.cols + block.count, local + (r + 1) * l.cols, 0.0f);
  }
}

void load_parameter_slices(const SafetensorsCheckpoint& ckpt, ParameterSet& params) {
  const PartWriter whole = through_scratch([&](size_t, const Parameter& p, float* dst) {
    read_block(ckpt.file_of(p.spec.name), ckpt.entry(p.spec.name), p.spec, dst);
  });
  write_held_values(params, [&](size_t i, const Parameter& p, ElementRun part, float* dst) {
    // An unsplit tensor held in part: just the run's bytes of the file.
    if (p.spec.tp_dim < 0 && part.size() < p.value.numel())
      return read_tensor_run(ckpt.file_of(p.spec.name), ckpt.entry(p.spec.name), part.begin,
                             {dst, static_cast<size_t>(part.size())});
    whole(i, p, part, dst);
  });
}

}  // namespace sft::model
