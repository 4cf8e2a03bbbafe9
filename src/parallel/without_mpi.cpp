// Built when SFT_MPI is OFF: the MPI communicator says how to get it.
#include "core/error.h"
#include "parallel/comm.h"

namespace sft {

std::unique_ptr<Comm> make_mpi_comm() {
  fail("parallel",
       "sft was built without MPI; rebuild with -DSFT_MPI=ON (scripts/setup.sh installs "
       "OpenMPI) to run under mpirun");
}

bool mpi_built() {
  return false;
}

}  // namespace sft
