// Normalizers (tokenizer.json "normalizer"): NFC, NFD, NFKC, NFKD, Lowercase, Strip,
// Replace (string or regex), Prepend, Sequence. Each rewrites one piece of text in place;
// the added-token splitter runs them on the text between added tokens, as HF does.
//
// normalize_aligned (offsets only) produces the same text and also rewrites a per-byte
// alignment to the input exactly as HF's NormalizedString does; the plain path stays free
// of that bookkeeping.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "io/json.h"
#include "text/load_context.h"
#include "text/pieces.h"

namespace sft::text {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // `head` is the byte length of the text's prefix that stems from the first character of
  // the input (0 once that character is gone). HF tracks an alignment per character; this
  // is the part of it Metaspace's prepend_scheme "first" needs ("does the text still start
  // at input offset 0?").
  virtual void normalize(std::string& text, size_t& head) const = 0;
  void normalize(std::string& text) const {
    size_t head = text.size();
    normalize(text, head);
  }
  // `align` holds one entry per byte of `text` and is rewritten along with it.
  virtual void normalize_aligned(std::string& text, std::vector<Align>& align) const = 0;
};

// nullptr for a JSON null. Throws naming `place` for unknown types or bad fields.
std::unique_ptr<Normalizer> make_normalizer(const Json& spec, const LoadContext& ctx,
                                            const std::string& place);

}  // namespace sft::text
