// Alignment bookkeeping for Tokenizer::encode_with_offsets, as HF `tokenizers` keeps it in
// NormalizedString: a normalizer describes its output as a stream of (character, change)
// pairs and `apply_changes` rebuilds the text and its per-byte alignment (HF's
// NormalizedString::transform):
//   change  0  the character replaces the next input character (takes its alignment),
//   change +1  it is inserted (takes the alignment of the input character before it),
//   change -n  it replaces the next input character and n more are removed.
// Unicode normalization produces its stream the way HF's `unicode-normalization-alignments`
// crate does (decompose, canonical reordering, then recomposition), because that stream —
// not just the normalized text — decides which input character each output one maps to.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "text/pieces.h"
#include "text/unicode.h"

namespace sft::text {

struct CharChange {
  char32_t c;
  int change;
};

// Rewrites `text` and `align` (one entry per byte) from `changes`, after dropping the
// first `skip_chars` characters. Characters past the last consumed one are dropped too.
// Throws sft::Error("[tokenizer] ...") when `changes` consumes more than the text holds.
void apply_changes(std::string& text, std::vector<Align>& align,
                   const std::vector<CharChange>& changes, size_t skip_chars = 0);

// The (character, change) stream of normalizing `text` to `form`, as HF produces it.
void normalization_changes(std::string_view text, NormalForm form, std::vector<CharChange>& out);

// Identity alignment of `text` shifted by `base`: every byte maps to its whole character.
void identity_alignment(std::string_view text, uint32_t base, std::vector<Align>& out);

}  // namespace sft::text
