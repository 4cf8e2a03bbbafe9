#include "train/stop_signal.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstring>

namespace sft {

namespace {

std::atomic<bool> g_stop{false};
struct sigaction g_old_int, g_old_term, g_old_usr1;
bool g_installed = false;
// The notice for SIGTERM: a fixed buffer, so the handler only reads it.
char g_term_notice[1024];
size_t g_term_notice_size = 0;

extern "C" void on_stop_signal(int sig) {
  g_stop.store(true);
  if (sig == SIGTERM && g_term_notice_size > 0) {
    [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, g_term_notice, g_term_notice_size);
  }
  std::signal(sig, SIG_DFL);  // a second signal stops the process at once
}

}  // namespace

void install_stop_signal_handlers() {
  if (g_installed) return;
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &g_old_int);
  sigaction(SIGTERM, &sa, &g_old_term);
  sigaction(SIGUSR1, &sa, &g_old_usr1);
  g_installed = true;
}

void uninstall_stop_signal_handlers() {
  if (!g_installed) return;
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
  sigaction(SIGUSR1, &g_old_usr1, nullptr);
  g_installed = false;
}

void set_stop_signal_notice(int signal, const std::string& line) {
  if (signal != SIGTERM) return;  // the one signal with something to add
  g_term_notice_size = std::min(line.size(), sizeof g_term_notice);
  std::memcpy(g_term_notice, line.data(), g_term_notice_size);
}

bool stop_requested() {
  return g_stop.load();
}
void request_stop() {
  g_stop.store(true);
}
void clear_stop_request() {
  g_stop.store(false);
}

}  // namespace sft
