// Levelled logging to stderr.
//
// The level comes from SFT_LOG_LEVEL (error, warn, info, debug; default info) or
// set_log_level(). Messages are built from any streamable values:
//   log_info("loaded ", n, " tensors from ", path);
// One line per call, written with a single write so concurrent lines never interleave.
//
// Under mpirun every rank runs the same code, so every line would come N times: set_log_rank
// makes rank 0 the one voice. Other ranks then drop info, warn and debug lines (rank 0 says the
// same), and their error lines, which are their own (a rank's collective timing out, its file
// missing), carry "rank K of N: " so the reader knows whose they are.
#pragma once

#include <sstream>
#include <string>
#include <string_view>

namespace sft {

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

LogLevel log_level();
void set_log_level(LogLevel level);
// Parses "error" | "warn" | "info" | "debug"; throws sft::Error otherwise.
LogLevel parse_log_level(std::string_view name);

// This process's rank among `world_size` (0 of 1 by default).
void set_log_rank(int rank, int world_size);
// "rank K of N: " on ranks other than 0, "" on rank 0 (for errors printed beside the log).
std::string log_rank_prefix();

void log_line(LogLevel level, std::string_view message);

template <typename... Args>
void log_at(LogLevel level, const Args&... args) {
  if (level > log_level()) return;
  std::ostringstream out;
  (out << ... << args);
  log_line(level, out.str());
}

template <typename... Args>
void log_error(const Args&... args) {
  log_at(LogLevel::kError, args...);
}
template <typename... Args>
void log_warn(const Args&... args) {
  log_at(LogLevel::kWarn, args...);
}
template <typename... Args>
void log_info(const Args&... args) {
  log_at(LogLevel::kInfo, args...);
}
template <typename... Args>
void log_debug(const Args&... args) {
  log_at(LogLevel::kDebug, args...);
}

}  // namespace sft
