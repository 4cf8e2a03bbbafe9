#include "train/tp_gather.h"

#include <cstring>
#include <vector>

#include "model/param_slices.h"

namespace sft {

std::optional<model::Transformer> gather_full_model(const model::Transformer& local,
                                                    ShardGroup& group) {
  std::optional<model::Transformer> whole;
  if (group.rank() == 0) whole = model::Transformer::zeros(local.config());
  std::vector<float> buf;
  for (const model::Parameter& p : local.params().all()) {
    buf.resize(static_cast<size_t>(shape_numel(p.spec.full_shape)));
    model::gather_blocks(p.spec, p.value.as<float>(), buf.data(), group);
    if (whole)
      std::memcpy(whole->param_data(p.spec.name), buf.data(), buf.size() * sizeof(float));
  }
  if (whole && local.compute_dtype() == DType::kBF16) whole->set_compute_dtype(DType::kBF16);
  return whole;
}

}  // namespace sft
