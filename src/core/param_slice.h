// ParamSlice: a run of parameters inside a flat arena and whether weight decay applies to it.
// The model's ParameterSet produces them; the optimizer consumes them (both include this).
#pragma once

#include <cstddef>

namespace sft {

struct ParamSlice {
  size_t offset = 0;
  size_t size = 0;
  bool decay = true;
};

}  // namespace sft
