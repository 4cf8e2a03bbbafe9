// Fuzz target: any byte string handed to the safetensors header parser must either
// parse or raise SafetensorsError — never crash, hang, leak or read out of bounds.
// Accepted headers are also checked for the invariants the reader relies on.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    sft::SafetensorsHeader header = sft::parse_safetensors_header(bytes, "fuzz-input");
    uint64_t expected = 0;
    for (const sft::TensorEntry& t : header.tensors) {
      // Tiling: the reader trusts these to index the mapping.
      if (t.begin != expected || t.end < t.begin) std::abort();
      expected = t.end;
    }
    if (header.data_start + expected != size) std::abort();
  } catch (const sft::SafetensorsError&) {
    // Rejected with a clear error: the expected outcome for most inputs.
  }
  return 0;
}
