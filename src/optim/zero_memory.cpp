#include "optim/zero_memory.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "core/error.h"

namespace sft {

std::vector<ShardRange> runs_outside_layers(std::vector<ShardRange> layers, size_t n,
                                            const char* who) {
  std::erase_if(layers, [](const ShardRange& r) { return r.size() == 0; });
  std::sort(layers.begin(), layers.end(),
            [](const ShardRange& a, const ShardRange& b) { return a.begin < b.begin; });
  std::vector<ShardRange> outside;
  size_t at = 0;
  for (const ShardRange& r : layers) {
    if (r.begin < at || r.end > n)
      fail("optim", std::string(who) + ": layer runs overlap or pass the end of the parameters");
    if (r.begin > at) outside.push_back({at, r.begin});
    at = r.end;
  }
  if (at < n) outside.push_back({at, n});
  return outside;
}

}  // namespace sft
