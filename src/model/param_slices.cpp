// Whole tensors ↔ tensor-parallel slices. See param_slices.h.
#include "model/param_slices.h"

#include <cstring>
#include <vector>

namespace sft::model {

namespace {

// (rows, cols) of a 1-D or 2-D shape, 1-D as one row.
struct Extent {
  int64_t rows, cols;
};
Extent extent(const Shape& s) {
  return s.size() == 1 ? Extent{1, s[0]} : Extent{s[0], s[1]};
}
// The split dimension in (rows, cols) terms: a 1-D tensor's dim 0 is its columns.
bool splits_columns(const ParamSpec& spec) {
  return spec.tp_dim == 1 || (spec.tp_dim == 0 && spec.shape.size() == 1);
}

}  // namespace

void copy_block(const ParamSpec& spec, const float* full, float* local) {
  const Extent l = extent(spec.shape), f = extent(spec.whole_shape());
  if (spec.tp_dim < 0) {
    std::memcpy(local, full, static_cast<size_t>(l.rows * l.cols) * sizeof(float));
  } else if (splits_columns(spec)) {
    for (int64_t r = 0; r < l.rows; ++r)
      std::memcpy(local + r * l.cols, full + r * f.cols + spec.tp_begin,
                  static_cast<size_t>(l.cols) * sizeof(float));
  } else {
    std::memcpy(local, full + spec.tp_begin * f.cols,
                static_cast<size_t>(l.rows * l.cols) * sizeof(float));
  }
}

void gather_blocks(const ParamSpec& spec, const float* local, float* full, ShardGroup& group) {
  const Extent l = extent(spec.shape);
  const size_t n = static_cast<size_t>(l.rows * l.cols);
  if (spec.tp_dim < 0) {
    std::memcpy(full, local, n * sizeof(float));
    return;
  }
  const size_t ranks = static_cast<size_t>(group.size()), me = static_cast<size_t>(group.rank());
  if (!splits_columns(spec) || l.rows == 1) {  // the blocks are contiguous in the whole tensor
    std::memcpy(full + me * n, local, n * sizeof(float));
    group.gather({full, n * ranks});
    return;
  }
  // Column blocks: gathered rank-major, then interleaved row by row.
  std::vector<float> blocks(n * ranks);
  std::memcpy(blocks.data() + me * n, local, n * sizeof(float));
  group.gather(blocks);
  const int64_t fc = l.cols * static_cast<int64_t>(ranks);
  for (size_t k = 0; k < ranks; ++k)
    for (int64_t r = 0; r < l.rows; ++r)
      std::memcpy(full + r * fc + static_cast<int64_t>(k) * l.cols,
                  blocks.data() + k * n + static_cast<size_t>(r * l.cols),
                  static_cast<size_t>(l.cols) * sizeof(float));
}

TensorBlock block_of(const ParamSpec& spec) {
  if (spec.tp_dim < 0) return {0, 0, spec.shape[0]};
  const size_t d = static_cast<size_t>(spec.tp_dim);
  return {spec.tp_dim, spec.tp_begin, spec.shape[d]};
}

void read_block(const SafetensorsFile& file, const TensorEntry& entry, const ParamSpec& spec,
                float* local) {
  read_tensor_block(file, entry, block_of(spec),
                    {local, static_cast<size_t>(shape_numel(spec.shape))});
}

void load_parameter_slices(const SafetensorsCheckpoint& ckpt, ParameterSet& params) {
  for (const Parameter& p : params.all())
    read_block(ckpt.file_of(p.spec.name), ckpt.entry(p.spec.name), p.spec, p.value.as<float>());
}

}  // namespace sft::model
