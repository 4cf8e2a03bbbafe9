// sft_hub_test_server: the tests' Hub (hub_server.h) as a program, for the end-to-end test
// (tests/cli/train_from_hub.cmake) and tools/check_hub_cache.py.
//
//   sft_hub_test_server --model ORG/NAME=DIR --dataset ORG/NAME=DIR [--gated ORG/NAME]
//                       [--uploads DIR] [--port-file FILE] [-- COMMAND ARGS...]
// With a COMMAND it runs it with HF_ENDPOINT pointing here and exits with its status;
// without one it writes the port to FILE and serves until killed.
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "io/hub_server.h"

int main(int argc, char** argv) {
  std::vector<sft::test::HubRepoSpec> repos;
  sft::test::HubFaults faults;
  std::string port_file, uploads;
  int command = -1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") {
      command = i + 1;
      break;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "sft_hub_test_server: %s needs a value\n", a.c_str());
      return 2;
    }
    const std::string v = argv[++i];
    if (a == "--model" || a == "--dataset") {
      const size_t eq = v.find('=');
      if (eq == std::string::npos) {
        std::fprintf(stderr, "sft_hub_test_server: %s wants ORG/NAME=DIR\n", a.c_str());
        return 2;
      }
      repos.push_back({a == "--dataset", v.substr(0, eq), v.substr(eq + 1), "main"});
    } else if (a == "--gated") {
      faults.gated.insert(v);
    } else if (a == "--uploads") {
      uploads = v;  // accept pushes (token hf_test_token), stored under DIR
    } else if (a == "--port-file") {
      port_file = v;
    } else {
      std::fprintf(stderr, "sft_hub_test_server: unknown flag %s\n", a.c_str());
      return 2;
    }
  }
  sft::test::HubTestServer server(repos, faults);
  if (!uploads.empty()) server.accept_uploads(uploads);
  if (!port_file.empty()) {
    const std::string temp = port_file + ".tmp";
    std::ofstream(temp) << server.port() << "\n";
    std::rename(temp.c_str(), port_file.c_str());  // readers never see a half-written port
  }
  if (command < 0 || command >= argc) {
    for (;;) ::pause();
  }
  setenv("HF_ENDPOINT", server.endpoint().c_str(), 1);
  const pid_t child = ::fork();
  if (child == 0) {
    ::execvp(argv[command], argv + command);
    std::perror("sft_hub_test_server: exec");
    std::_Exit(127);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
