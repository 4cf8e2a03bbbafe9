// Normalizers (tokenizer.json "normalizer"): NFC, NFD, NFKC, NFKD, Lowercase, Strip,
// Replace (string or regex), Prepend, Sequence. Each rewrites one piece of text in place;
// the added-token splitter runs them on the text between added tokens, as HF does.
#pragma once

#include <memory>
#include <string>

#include "io/json.h"
#include "text/load_context.h"

namespace sft::text {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual void normalize(std::string& text) const = 0;
};

// nullptr for a JSON null. Throws naming `place` for unknown types or bad fields.
std::unique_ptr<Normalizer> make_normalizer(const Json& spec, const LoadContext& ctx,
                                            const std::string& place);

}  // namespace sft::text
