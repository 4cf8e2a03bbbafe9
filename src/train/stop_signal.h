// SIGINT / SIGTERM as a request to stop: the trainer finishes the current optimizer step,
// writes a checkpoint and exits cleanly. A second signal of the same kind kills the process
// as usual (the handler restores the default action after the first one).
//
// SIGUSR1 is a stop request too: it is the signal mpirun forwards to every rank as it is
// (`kill -USR1 <mpirun pid>`), where a SIGINT to mpirun makes it SIGTERM the ranks and SIGKILL
// them 1 s later (odls_base_sigkill_timeout), too soon for most saves. `sft train
// --nproc_per_node` turns the user's Ctrl-C into that SIGUSR1 (parallel/launch.h).
#pragma once

#include <string>

namespace sft {

// Installs the handlers (idempotent). Restored to the previous ones by uninstall.
void install_stop_signal_handlers();
void uninstall_stop_signal_handlers();

// True once a stop was requested (and until clear_stop_request).
// A line the handler writes to stderr (one write(), async-signal-safe) when `signal`'s first
// stop request arrives: what the stop can and cannot do where it came from (mpirun's SIGTERM).
// "" removes it. Not to be called while a signal may arrive.
void set_stop_signal_notice(int signal, const std::string& line);

bool stop_requested();
void request_stop();  // what the handlers do; also for tests
void clear_stop_request();

}  // namespace sft
