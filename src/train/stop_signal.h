// SIGINT / SIGTERM as a request to stop: the trainer finishes the current optimizer step,
// writes a checkpoint and exits cleanly. A second signal of the same kind kills the process
// as usual (the handler restores the default action after the first one).
#pragma once

namespace sft {

// Installs the handlers (idempotent). Restored to the previous ones by uninstall.
void install_stop_signal_handlers();
void uninstall_stop_signal_handlers();

// True once a stop was requested (and until clear_stop_request).
bool stop_requested();
void request_stop();  // what the handlers do; also for tests
void clear_stop_request();

}  // namespace sft
