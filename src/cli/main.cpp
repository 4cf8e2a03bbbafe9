// sft: supervised fine-tuning of Hugging Face decoder LLMs.
//
// Dispatches `sft <command> ...` to the commands cli/cmd_*.cpp register and is the one place where
// errors are caught: the message goes to stderr and the exit code is 1 (2 for a UsageError). When
// OpenBLAS fell back to slow generic kernels on this CPU, it first re-executes itself with
// OPENBLAS_CORETYPE set (ops/blas_kernels.h).
#include <limits.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#include "cli/command_registry.h"
#include "core/error.h"
#include "io/options.h"  // UsageError
#include "ops/backend.h"
#include "ops/blas_kernels.h"

namespace {

void print_help() {
  std::printf(
      "sft %s: supervised fine-tuning of Hugging Face decoder LLMs (Llama, Mistral, Qwen2, "
      "Qwen3)\n\n"
      "usage: sft <command> [options]\n\ncommands:\n",
      SFT_VERSION);
  for (const sft::cli::Command& c : sft::cli::registered_commands())
    std::printf("  %-10.*s %.*s\n", int(c.name.size()), c.name.data(), int(c.summary.size()),
                c.summary.data());
  std::printf("\nRun `sft <command> --help` for a command's options.\n");
}

// Re-executes this binary with the same argv. Through its resolved path, not /proc/self/exe:
// the kernel names a process after the file it executes, so exec'ing /proc/self/exe would
// rename it `exe` (/proc/PID/comm), and `pgrep sft`, `top` and `ps` would not find it as sft.
// (A symlink to sft is thus listed under the target's name.) /proc/self/exe itself is the
// fallback, for a binary deleted or replaced since it started.
void reexec_self(char** argv) {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n > 0) {
    path[n] = '\0';
    execv(path, argv);
  }
  execv("/proc/self/exe", argv);
}

}  // namespace

int main(int argc, char** argv) {
  const char* coretype = sft::ops::better_blas_coretype();
  // SFT_TEST_REEXEC=1: re-execute even where OpenBLAS picked good kernels itself, pinning the
  // ones it picked (so nothing changes but the exec), so that tests/cli/process_name.cmake
  // checks the re-exec on any CPU.
  std::string pinned;
  if (!coretype && std::getenv("SFT_TEST_REEXEC") && !std::getenv("OPENBLAS_CORETYPE")) {
    pinned = sft::ops::blas_kernel_name();
    if (!pinned.empty()) coretype = pinned.c_str();
  }
  if (coretype) {
    setenv("OPENBLAS_CORETYPE", coretype, 1);
    reexec_self(argv);  // returns only on failure: carry on with the slow kernels
  }
  if (argc < 2) {
    print_help();
    return 2;
  }
  const std::string_view first = argv[1];
  if (first == "--help" || first == "-h" || first == "help") {
    print_help();
    return 0;
  }
  if (first == "--version" || first == "-V") {
    std::printf("sft %s (backends: %s; OpenBLAS kernels: %s)\n", SFT_VERSION,
                sft::compiled_backends().c_str(), sft::ops::blas_kernel_name().c_str());
    return 0;
  }
  for (const sft::cli::Command& c : sft::cli::registered_commands()) {
    if (c.name != first) continue;
    sft::cli::Args args(argv + 2, argv + argc);
    try {
      return c.run(args);
    } catch (const sft::UsageError& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
      return 2;
    } catch (const sft::Error& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
      return 1;
    } catch (const std::exception& e) {
      // Anything not ours is a bug in sft, not in the user's input: say so.
      std::fprintf(stderr, "error: [internal] %s (please report this)\n", e.what());
      return 1;
    }
  }
  std::fprintf(stderr, "error: unknown command '%s'; run `sft --help` for the list\n", argv[1]);
  return 2;
}
