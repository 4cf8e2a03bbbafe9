// Only the held run of the values written. See held_values.h.
#include "model/held_values.h"

#include <algorithm>
#include <vector>

namespace sft::model {

void write_held_values(ParameterSet& params, const PartWriter& write) {
  const std::span<const Parameter> all = params.all();
  for (size_t i = 0; i < all.size(); ++i) {
    const ElementRun part = params.held_part(all[i]);
    if (!part.empty()) write(i, all[i], part, all[i].value.as<float>() + part.begin);
  }
}

PartWriter through_scratch(WholeWriter whole) {
  return [whole = std::move(whole)](size_t index, const Parameter& p, ElementRun part, float* dst) {
    if (part.begin == 0 && part.end == p.value.numel()) return whole(index, p, dst);
    std::vector<float> scratch(static_cast<size_t>(p.value.numel()));  // zero, as the arena
    whole(index, p, scratch.data());
    std::copy(scratch.begin() + part.begin, scratch.begin() + part.end, dst);
  };
}

}  // namespace sft::model
