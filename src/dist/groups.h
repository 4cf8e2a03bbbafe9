// The process groups of a run: world = tp_size × dp ranks, Megatron's layout (the ranks of
// one tensor-parallel group are adjacent: tp rank = world rank % tp_size, dp rank = world
// rank / tp_size). Tensor parallelism is not implemented yet, so tp_size is 1 today and the
// data-parallel group is the whole world; the split exists so the trainer already talks to
// its data-parallel group, never to the world.
#pragma once

#include <memory>

#include "dist/comm.h"

namespace sft {

struct ParallelGroups {
  std::unique_ptr<Comm> dp, tp;
};

// Throws "[dist] ..." when the world size does not divide by tp_size.
ParallelGroups make_parallel_groups(Comm& world, int tp_size);

}  // namespace sft
