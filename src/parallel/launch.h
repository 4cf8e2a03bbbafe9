// `sft train --nproc_per_node N` (torchrun's flag): re-executes this binary under
// `mpirun -np N` on this host with the same arguments minus that flag. mpirun comes from
// $SFT_MPIRUN, else PATH; as root it gets --allow-run-as-root (containers), and
// --oversubscribe lets N exceed the cores (slower, still correct).
#pragma once

#include <string>
#include <vector>

namespace sft {

// Whether this process was started by an MPI launcher (mpirun, srun with PMIx).
bool under_mpi_launcher();
// The world rank the launcher gave this process (0 without one), known before MPI starts.
int launcher_world_rank();

// The command line `relaunch_under_mpirun` runs (for messages and tests).
std::vector<std::string> mpirun_command(int nproc, const std::string& self,
                                        const std::vector<std::string>& args);

// Replaces this process (execvp); throws "[parallel] ..." when mpirun cannot be started.
[[noreturn]] void relaunch_under_mpirun(int nproc, const std::vector<std::string>& args);

// `args` without --nproc_per_node N / --nproc_per_node=N.
std::vector<std::string> without_nproc_flag(const std::vector<std::string>& args);

}  // namespace sft
