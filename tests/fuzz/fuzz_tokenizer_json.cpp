// Fuzz target: any byte string handed to the tokenizer.json loader must either load or
// raise sft::Error — never crash, hang, leak or read out of bounds. A loaded tokenizer
// must also encode and decode a fixed sample without failing.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "text/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string json(reinterpret_cast<const char*>(data), size);
  try {
    sft::text::Tokenizer tok = sft::text::Tokenizer::from_json(json, "fuzz-input");
    auto ids = tok.encode("Hello wörld 12 <s> 你好", true);
    (void)tok.decode(ids, false);
  } catch (const sft::Error&) {
    // Rejected with a clear error: the expected outcome for most inputs.
  }
  return 0;
}
