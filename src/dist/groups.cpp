#include "dist/groups.h"

#include <string>

#include "core/error.h"

namespace sft {

ParallelGroups make_parallel_groups(Comm& world, int tp_size) {
  if (tp_size < 1 || world.size() % tp_size != 0)
    fail("dist", "world size " + std::to_string(world.size()) + " does not divide by tp_size " +
                     std::to_string(tp_size) + " (hint: run a multiple of --tp_size processes)");
  ParallelGroups g;
  const int r = world.rank();
  g.tp = world.split(r / tp_size, r % tp_size);
  g.dp = world.split(r % tp_size, r / tp_size);
  return g;
}

}  // namespace sft
