// Fuzz target: any bytes in a checkpoint's quant_state tensor (bitsandbytes' 4-bit metadata)
// must either parse into a state the reader can trust or raise sft::Error — never crash,
// hang or overflow. Accepted states are checked for the bounds read_quant4_weight relies on.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/error.h"
#include "model/quant4_state.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  try {
    const sft::model::Quant4State s = sft::model::parse_quant4_state(json, "fuzz-input");
    if (s.shape.size() != 2 || s.blocksize <= 0 || s.blocksize > (int64_t{1} << 31)) std::abort();
    for (int64_t d : s.shape)
      if (d <= 0 || d > (int64_t{1} << 31)) std::abort();
    if (s.nested && (s.nested_blocksize <= 0 || s.nested_blocksize > (int64_t{1} << 31)))
      std::abort();
  } catch (const sft::Error&) {
    // Refused with a clear error.
  }
  return 0;
}
