// Edit distance between two names, for "did you mean" hints (flags, Hub repos, model types):
// the fewest inserts, deletes, substitutions and swaps of two neighbouring characters that turn
// a into b (a swapped pair is one slip, as people type: --cuont). case_blind compares letters
// without their case (Hub ids: Qwen/qwen3-0.6b is one repo).
#pragma once

#include <cstddef>
#include <string_view>

namespace sft {

size_t edit_distance(std::string_view a, std::string_view b, bool case_blind = false);

}  // namespace sft
