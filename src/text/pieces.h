// The text of one encode call as it flows through the pipeline: a list of pieces stored
// back to back in one buffer. A piece is either an added token (already an id) or text
// still to be pre-tokenized and run through the model. Buffers are reused between calls,
// so the hot path does not allocate once warm.
//
// Offsets (Tokenizer::encode_with_offsets only, `track` set): every byte of `text` also
// records the input bytes it stems from (HF NormalizedString's per-byte alignment), and an
// added-token piece records the input bytes it matched. Plain encode leaves both untouched.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sft::text {

// [begin, end) bytes of the input that one byte of pipeline text stems from. All bytes of
// one character share it, as in HF (a character's alignment is that of the whole source
// character, e.g. every byte-level character of "中" maps to the 3 bytes of "中").
struct Align {
  uint32_t begin = 0, end = 0;
};

struct Piece {
  // Text piece: bytes in Pieces::text. Added-token piece with `track`: its input bytes.
  uint32_t begin = 0, end = 0;
  int32_t token_id = -1;   // >= 0: an added token, not touched by later stages
  bool at_origin = false;  // starts at byte 0 of the original input (Metaspace "first")
};

struct Pieces {
  std::string text;
  std::vector<Piece> items;
  std::vector<Align> align;  // with `track`: one per byte of text
  bool track = false;

  void clear() {
    text.clear();
    items.clear();
    align.clear();
  }
  std::string_view view(const Piece& p) const {
    return std::string_view(text).substr(p.begin, p.end - p.begin);
  }
  // The alignment of a text piece's first byte, or null when offsets are not tracked.
  const Align* align_of(const Piece& p) const { return track ? align.data() + p.begin : nullptr; }
  // Appends a piece (empty text pieces are dropped, as HF drops empty splits). With `track`,
  // `from` holds the alignment of each byte of `s`.
  void add(std::string_view s, int32_t token_id, bool at_origin, const Align* from = nullptr) {
    if (s.empty() && token_id < 0) return;
    auto b = static_cast<uint32_t>(text.size());
    text.append(s);
    items.push_back({b, static_cast<uint32_t>(text.size()), token_id, at_origin});
    if (track) align.insert(align.end(), from, from + s.size());
  }
  void add_token(int32_t token_id, Align input = {}) {
    items.push_back({input.begin, input.end, token_id, false});
  }
};

}  // namespace sft::text
