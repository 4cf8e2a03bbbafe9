// edit_distance: the optimal-string-alignment distance (Damerau–Levenshtein without the
// second edit of a swapped pair), one (|a| + 1) × (|b| + 1) table. See edit_distance.h.
#include "core/edit_distance.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace sft {

size_t edit_distance(std::string_view a, std::string_view b, bool case_blind) {
  auto same = [&](char x, char y) {
    if (!case_blind) return x == y;
    return std::tolower(static_cast<unsigned char>(x)) ==
           std::tolower(static_cast<unsigned char>(y));
  };
  const size_t w = b.size() + 1;
  std::vector<size_t> d((a.size() + 1) * w);
  for (size_t i = 0; i <= a.size(); ++i) d[i * w] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = same(a[i - 1], b[j - 1]) ? 0 : 1;
      size_t v =
          std::min({d[(i - 1) * w + j] + 1, d[i * w + j - 1] + 1, d[(i - 1) * w + j - 1] + cost});
      if (i > 1 && j > 1 && same(a[i - 1], b[j - 2]) && same(a[i - 2], b[j - 1]))
        v = std::min(v, d[(i - 2) * w + j - 2] + 1);
      d[i * w + j] = v;
    }
  }
  return d[a.size() * w + b.size()];
}

}  // namespace sft
