// Rendering trained spans (see preview.h).
#include "data/preview.h"

namespace sft::data {

std::string render_trained_spans(const text::Tokenizer& tokenizer, const TokenRow& row, bool ansi) {
  std::string out;
  const size_t n = row.input_ids.size();
  for (size_t begin = 0; begin < n;) {
    const bool trained = row.labels[begin] != kIgnoreLabel;
    size_t end = begin;
    while (end < n && (row.labels[end] != kIgnoreLabel) == trained) ++end;
    // Decoded per run: a character split across a run boundary shows as U+FFFD, which
    // is rare and harmless for a preview.
    std::string text = tokenizer.decode(row.input_ids.subspan(begin, end - begin));
    if (trained)
      out += (ansi ? "\x1b[32m" : "[[") + text + (ansi ? "\x1b[0m" : "]]");
    else
      out += text;
    begin = end;
  }
  return out;
}

}  // namespace sft::data
