#include "core/log.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>

#include "core/error.h"
#include "core/progress_phase.h"

namespace sft {

namespace {

LogLevel initial_level() {
  const char* env = std::getenv("SFT_LOG_LEVEL");
  if (env == nullptr || *env == '\0') return LogLevel::kInfo;
  try {
    return parse_log_level(env);
  } catch (const Error&) {
    return LogLevel::kInfo;  // a bad env value must not stop the program; the default is safe
  }
}

std::atomic<LogLevel>& level_slot() {
  static std::atomic<LogLevel> level{initial_level()};
  return level;
}

const char* level_tag(LogLevel level) {
  switch (level) {
    case LogLevel::kError:
      return "error";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kDebug:
      return "debug";
  }
  return "?";
}

}  // namespace

LogLevel log_level() {
  return level_slot().load(std::memory_order_relaxed);
}

void set_log_level(LogLevel level) {
  level_slot().store(level, std::memory_order_relaxed);
}

LogLevel parse_log_level(std::string_view name) {
  if (name == "error") return LogLevel::kError;
  if (name == "warn" || name == "warning") return LogLevel::kWarn;
  if (name == "info") return LogLevel::kInfo;
  if (name == "debug") return LogLevel::kDebug;
  fail("log",
       "unknown log level '" + std::string(name) + "' (expected error, warn, info or debug)");
}

void log_line(LogLevel level, std::string_view message) {
  std::string line = "[sft ";
  line.append(level_tag(level)).append("] ").append(message).append("\n");
  clear_status_line();  // a phase spinner on the terminal gives the line back first
  // One write() per line: lines from different threads may reorder but never interleave.
  size_t done = 0;
  while (done < line.size()) {
    ssize_t n = ::write(STDERR_FILENO, line.data() + done, line.size() - done);
    if (n <= 0) return;  // nowhere to report a failure to log
    done += static_cast<size_t>(n);
  }
}

}  // namespace sft
