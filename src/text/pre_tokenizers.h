// Pre-tokenizers (tokenizer.json "pre_tokenizer"): ByteLevel, Split, Metaspace, Digits,
// Punctuation, Whitespace, WhitespaceSplit, Sequence. Each turns every text piece into
// smaller pieces (HF's PreTokenizedString::split), leaving added-token pieces alone.
#pragma once

#include <memory>
#include <string>

#include "io/json.h"
#include "text/load_context.h"
#include "text/pieces.h"

namespace sft::text {

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Rewrites `io`; `scratch` is a reusable buffer.
  virtual void pre_tokenize(Pieces& io, Pieces& scratch) const = 0;
};

// nullptr for a JSON null. Throws naming `place` for unknown types or bad fields.
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const Json& spec, const LoadContext& ctx,
                                                 const std::string& place);

// How a split keeps its delimiters (HF SplitDelimiterBehavior).
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

}  // namespace sft::text
