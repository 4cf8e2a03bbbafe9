// Communicators for data-parallel training: every rank holds a replica and the
// gradients are summed across ranks. `local` is the single-process communicator;
// `mpi` (built with -DSFT_MPI=ON) spans processes launched by mpirun. Depends on core only.
#pragma once

#include <memory>
#include <span>

namespace sft {

class Comm {
 public:
  virtual ~Comm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // In-place sum over all ranks; every rank ends with the same values.
  virtual void all_reduce_sum(std::span<float> values) = 0;
  virtual void barrier() = 0;
};

std::unique_ptr<Comm> make_local_comm();
// Throws "[dist] sft was built without MPI; ..." in builds without SFT_MPI.
std::unique_ptr<Comm> make_mpi_comm();
// MPI when launched under mpirun (OMPI_COMM_WORLD_SIZE / PMI_SIZE > 1), else local.
std::unique_ptr<Comm> make_comm_from_environment();

}  // namespace sft
