#include "train/stop_signal.h"

#include <atomic>
#include <csignal>

namespace sft {

namespace {

std::atomic<bool> g_stop{false};
struct sigaction g_old_int, g_old_term;
bool g_installed = false;

extern "C" void on_stop_signal(int sig) {
  g_stop.store(true);
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
  g_installed = true;
}

void uninstall_stop_signal_handlers() {
  if (!g_installed) return;
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
  g_installed = false;
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
