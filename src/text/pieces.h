// The text of one encode call as it flows through the pipeline: a list of pieces stored
// back to back in one buffer. A piece is either an added token (already an id) or text
// still to be pre-tokenized and run through the model. Buffers are reused between calls,
// so the hot path does not allocate once warm.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sft::text {

struct Piece {
  uint32_t begin = 0, end = 0;  // bytes in Pieces::text
  int32_t token_id = -1;        // >= 0: an added token, not touched by later stages
  bool at_origin = false;       // starts at byte 0 of the original input (Metaspace "first")
};

struct Pieces {
  std::string text;
  std::vector<Piece> items;

  void clear() {
    text.clear();
    items.clear();
  }
  std::string_view view(const Piece& p) const {
    return std::string_view(text).substr(p.begin, p.end - p.begin);
  }
  // Appends a piece (empty text pieces are dropped, as HF drops empty splits).
  void add(std::string_view s, int32_t token_id, bool at_origin) {
    if (s.empty() && token_id < 0) return;
    auto b = static_cast<uint32_t>(text.size());
    text.append(s);
    items.push_back({b, static_cast<uint32_t>(text.size()), token_id, at_origin});
  }
  void add_token(int32_t token_id) { items.push_back({0, 0, token_id, false}); }
};

}  // namespace sft::text
