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

struct RankSlot {
  std::atomic<int> rank{0};
  std::atomic<int> world_size{1};
};
RankSlot& rank_slot() {
  static RankSlot slot;
  return slot;
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

void set_log_rank(int rank, int world_size) {
  rank_slot().rank.store(rank, std::memory_order_relaxed);
  rank_slot().world_size.store(world_size, std::memory_order_relaxed);
}

std::string log_rank_prefix() {
  const int rank = rank_slot().rank.load(std::memory_order_relaxed);
  if (rank == 0) return "";
  return "rank " + std::to_string(rank) + " of " +
         std::to_string(rank_slot().world_size.load(std::memory_order_relaxed)) + ": ";
}

void log_line(LogLevel level, std::string_view message) {
  const bool other_rank = rank_slot().rank.load(std::memory_order_relaxed) != 0;
  if (other_rank && level != LogLevel::kError) return;  // rank 0 says it for every rank
  std::string line = "[sft ";
  line.append(level_tag(level)).append("] ").append(log_rank_prefix()).append(message).append("\n");
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
