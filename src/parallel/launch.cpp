#include "parallel/launch.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/error.h"
#include "core/log.h"

namespace sft {

namespace {

volatile sig_atomic_t g_signals = 0;  // SIGINT / SIGTERM the launcher has received

extern "C" void on_launcher_signal(int) {
  g_signals = g_signals + 1;
}

// argv of process `pid` (empty when unreadable, as for a process on another host).
std::vector<std::string> cmdline_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  const std::string raw{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  std::vector<std::string> words;
  size_t start = 0;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '\0') continue;
    words.push_back(raw.substr(start, i - start));
    start = i + 1;
  }
  return words;
}

int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : 0;
}

}  // namespace

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
  std::vector<std::string> cmd = {env && *env ? env : "mpirun",
                                  "-np",
                                  std::to_string(nproc),
                                  "--oversubscribe",
                                  "--stdin",
                                  "none"};
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

int relaunch_under_mpirun(int nproc, const std::vector<std::string>& args) {
  std::error_code ec;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec) fail("parallel", "--nproc_per_node: cannot find this executable (" + ec.message() + ")");
  const std::vector<std::string> cmd = mpirun_command(nproc, self, args);
  std::vector<char*> argv;
  for (const std::string& a : cmd) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  setenv("SFT_LAUNCHER_PID", std::to_string(::getpid()).c_str(), 1);
  setenv("SFT_NPROC_PER_NODE", std::to_string(nproc).c_str(), 1);
  // The handlers are in place before mpirun exists, so no signal falls between.
  struct sigaction sa = {};
  struct sigaction old_int = {};
  struct sigaction old_term = {};
  sa.sa_handler = on_launcher_signal;  // no SA_RESTART: the wait below wakes to forward it
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  int exec_error[2];
  if (::pipe2(exec_error, O_CLOEXEC) != 0)
    fail("parallel",
         std::string("--nproc_per_node: cannot create a pipe: ") + std::strerror(errno));
  const pid_t parent = ::getpid();
  const pid_t child = ::fork();
  if (child < 0)
    fail("parallel", std::string("--nproc_per_node: cannot fork: ") + std::strerror(errno));
  if (child == 0) {
    ::setpgid(0, 0);                     // the terminal's Ctrl-C reaches the launcher only
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // a launcher killed outright takes the job with it
    if (::getppid() != parent) ::_exit(1);
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    execvp(argv[0], argv.data());
    const int err = errno;
    [[maybe_unused]] ssize_t n = ::write(exec_error[1], &err, sizeof err);
    ::_exit(127);
  }
  ::setpgid(child, child);  // either side may run first
  ::close(exec_error[1]);
  int err = 0;
  const bool exec_failed = ::read(exec_error[0], &err, sizeof err) == sizeof err;
  ::close(exec_error[0]);
  // Polled rather than blocking in waitpid: a signal landing just before a blocking wait
  // would not interrupt it and would wait for mpirun's end to be forwarded.
  int status = 0, forwarded = 0;
  bool reaped = false;
  int wait_errno = 0;
  while (!reaped) {
    for (; forwarded < g_signals; ++forwarded) {
      if (forwarded == 0) {
        log_info(
            "[parallel] stopping: every rank finishes its step and saves a checkpoint "
            "(interrupt again to abort at once)");
        ::kill(child, SIGUSR1);  // mpirun forwards it to every rank
      } else {
        ::kill(child, SIGINT);  // mpirun's own abort: SIGTERM, then SIGKILL
      }
    }
    const pid_t done = ::waitpid(child, &status, WNOHANG);
    if (done == child) reaped = true;
    if (done < 0 && errno != EINTR) {
      wait_errno = errno;
      break;
    }
    if (done == 0) ::usleep(20000);  // a signal cuts it short
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  if (exec_failed)
    fail("parallel", "--nproc_per_node " + std::to_string(nproc) + ": cannot run " + cmd[0] + ": " +
                         std::strerror(err) +
                         " (hint: install OpenMPI with scripts/setup.sh, or set SFT_MPIRUN)");
  if (!reaped)
    fail("parallel",
         "--nproc_per_node: lost track of mpirun: " + std::string(std::strerror(wait_errno)));
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

std::vector<std::string> launch_words_from(const std::string& command,
                                           const std::vector<std::string>& args,
                                           const std::vector<std::string>& parent_cmdline,
                                           int nproc_per_node, int world_size) {
  std::vector<std::string> words = {"sft", command};
  if (nproc_per_node > 1) {
    words.push_back("--nproc_per_node");
    words.push_back(std::to_string(nproc_per_node));
    return words;
  }
  if (world_size <= 1) return words;
  // mpirun's own argv ends with "<program> <command> <args...>": its words up to the program
  // are the launch as the user typed it (hostfile, binding, environment flags and all).
  const size_t tail = args.size() + 2;
  const std::vector<std::string>& p = parent_cmdline;
  if (p.size() > tail && p[p.size() - tail + 1] == command &&
      std::equal(args.begin(), args.end(), p.end() - static_cast<std::ptrdiff_t>(args.size())))
    return {p.begin(), p.end() - static_cast<std::ptrdiff_t>(args.size())};
  return {"mpirun", "-np", std::to_string(world_size), "sft", command};
}

std::vector<std::string> launch_words(const std::string& command,
                                      const std::vector<std::string>& args) {
  int world = 1;
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
    if (const int n = env_int(var); n > 0) {
      world = n;
      break;
    }
  return launch_words_from(command, args,
                           world > 1 ? cmdline_of(::getppid()) : std::vector<std::string>{},
                           env_int("SFT_NPROC_PER_NODE"), world);
}

}  // namespace sft
