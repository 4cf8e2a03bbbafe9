// Fuzz target: any byte string encoded by the committed tiny tokenizers (one per family
// pipeline, chosen by the first byte) must either encode or raise sft::Error (invalid
// UTF-8) — never crash. Encoded ids must decode, and the streaming decoder must agree
// with the one-shot decode.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "text/tokenizer.h"

namespace {
const std::vector<std::unique_ptr<sft::text::Tokenizer>>& tokenizers() {
  static const auto all = [] {
    std::vector<std::unique_ptr<sft::text::Tokenizer>> out;
    for (const char* name : {"tiny_qwen", "tiny_llama3", "tiny_gpt2", "tiny_llama2", "tiny_gemma",
                             "tiny_metaspace", "tiny_wordish", "tiny_splits"})
      out.push_back(std::make_unique<sft::text::Tokenizer>(sft::text::Tokenizer::from_file(
          std::string(SFT_SOURCE_DIR) + "/tests/fixtures/tokenizers/" + name)));
    return out;
  }();
  return all;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto& all = tokenizers();
  sft::text::Tokenizer& tok = *all[data[0] % all.size()];
  std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::vector<int32_t> ids;
  try {
    ids = tok.encode(text, (data[0] & 0x80) != 0);
  } catch (const sft::Error&) {
    return 0;  // not UTF-8
  }
  std::string once = tok.decode(ids, false);
  sft::text::DecodeStream stream(tok);
  std::string streamed;
  try {
    for (int32_t id : ids)
      if (auto piece = stream.step(id)) streamed += *piece;
  } catch (const sft::Error&) {
    return 0;  // a decoder that is not prefix-stable (e.g. Strip) is reported, not a crash
  }
  if (once.compare(0, streamed.size(), streamed) != 0) std::abort();
  return 0;
}
