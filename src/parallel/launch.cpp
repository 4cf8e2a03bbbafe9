#include "parallel/launch.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "core/error.h"

namespace sft {

bool under_mpi_launcher() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(var) != nullptr) return true;
  return false;
}

int launcher_world_rank() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"})
    if (const char* v = std::getenv(var); v && *v) return std::atoi(v);
  return 0;
}

std::vector<std::string> mpirun_command(int nproc, const std::string& self,
                                        const std::vector<std::string>& args) {
  const char* env = std::getenv("SFT_MPIRUN");
  std::vector<std::string> cmd = {env && *env ? env : "mpirun", "-np", std::to_string(nproc),
                                  "--oversubscribe"};
  if (geteuid() == 0) cmd.push_back("--allow-run-as-root");
  cmd.push_back(self);
  cmd.push_back("train");
  cmd.insert(cmd.end(), args.begin(), args.end());
  return cmd;
}

std::vector<std::string> without_nproc_flag(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--nproc_per_node") {
      ++i;
      continue;
    }
    if (args[i].rfind("--nproc_per_node=", 0) == 0) continue;
    out.push_back(args[i]);
  }
  return out;
}

void relaunch_under_mpirun(int nproc, const std::vector<std::string>& args) {
  std::error_code ec;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec) fail("parallel", "--nproc_per_node: cannot find this executable (" + ec.message() + ")");
  const std::vector<std::string> cmd = mpirun_command(nproc, self, args);
  std::vector<char*> argv;
  for (const std::string& a : cmd) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  fail("parallel", "--nproc_per_node " + std::to_string(nproc) + ": cannot run " + cmd[0] + ": " +
                   std::strerror(errno) +
                   " (hint: install OpenMPI with scripts/setup.sh, or set SFT_MPIRUN)");
}

}  // namespace sft
