// `sft train --nproc_per_node N` (torchrun's flag): re-executes this binary under
// `mpirun -np N` on this host with the same arguments minus that flag. mpirun comes from
// $SFT_MPIRUN, else PATH; as root it gets --allow-run-as-root (containers), and
// --oversubscribe lets N exceed the cores (slower, still correct).
//
// The launcher stays as mpirun's parent rather than becoming it: on a SIGINT mpirun SIGTERMs
// the ranks and SIGKILLs them 1 s later (OpenMPI's odls_base_sigkill_timeout), which kills any
// save that takes longer. So mpirun runs in its own process group (the terminal's Ctrl-C
// reaches only the launcher), with --stdin none (a background group must not read the
// terminal), and the launcher turns the first SIGINT / SIGTERM into a SIGUSR1 to mpirun, which
// forwards it to every rank as a stop request (train/stop_signal.h); a second one is passed on
// as a SIGINT, mpirun's abort. The ranks find the launcher in $SFT_LAUNCHER_PID and its N in
// $SFT_NPROC_PER_NODE (for the resume command they print).

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

// Runs `args` under mpirun and returns its exit status (128 + signal if it was killed); throws
// "[parallel] ..." when mpirun cannot be started.
int relaunch_under_mpirun(int nproc, const std::vector<std::string>& args);

// How this process was launched, to print a command that repeats it: the words before
// `command`'s flags. "sft <command>" alone; "sft <command> --nproc_per_node N" under that
// launcher; under the user's own mpirun its words up to the program, when `parent_cmdline`
// (mpirun's argv, read from /proc on the host where rank 0 runs) ends with this process's
// `command` and `args`; else "mpirun -np <world_size> sft <command>". Never a flag of sft's
// own making.
std::vector<std::string> launch_words(const std::string& command,
                                      const std::vector<std::string>& args);
// The same, with what it reads from the environment given: the parent's argv, the launcher's
// N (0 without it) and the world size (1 without a launcher).
std::vector<std::string> launch_words_from(const std::string& command,
                                           const std::vector<std::string>& args,
                                           const std::vector<std::string>& parent_cmdline,
                                           int nproc_per_node, int world_size);

// `args` without --nproc_per_node N / --nproc_per_node=N.
std::vector<std::string> without_nproc_flag(const std::vector<std::string>& args);

}  // namespace sft
