// Per-op timing. See profile.h.
#include "ops/profile.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <vector>

#include "core/clock.h"
#include "core/error.h"

namespace sft::ops {

namespace {

struct Entry {
  int64_t calls = 0;
  double seconds = 0;
};

std::map<std::string, Entry>& table() {
  static std::map<std::string, Entry> t;
  return t;
}

int depth = 0;

// SFT_PROFILE_SKIP: forward passes still to leave out of the table (read when profiling starts).
int64_t& forwards_to_skip() {
  static int64_t n = [] {
    const char* v = std::getenv("SFT_PROFILE_SKIP");
    if (!v || !*v) return int64_t{0};
    char* end = nullptr;
    const long long parsed = std::strtoll(v, &end, 10);
    if (*end != '\0' || parsed < 0)
      fail("ops", std::string("SFT_PROFILE_SKIP='") + v +
                      "' is not a number of forward passes (hint: SFT_PROFILE_SKIP=1 leaves out "
                      "the first step)");
    return static_cast<int64_t>(parsed);
  }();
  return n;
}

// The first op of a forward pass: each one counts down the passes to leave out, and the table
// restarts until none is left.
void count_forward_pass(const char* name) {
  if (std::strcmp(name, "embedding_forward") != 0) return;
  int64_t& left = forwards_to_skip();
  if (left < 0) return;
  table().clear();
  --left;
}

// SFT_PROFILE=cpu: the calling thread's CPU time instead of wall time. With one thread
// (SFT_NUM_THREADS=1) it is the op's own work, which other processes on a loaded machine slow
// far less than the wall clock.
bool cpu_clock() {
  static const bool on = [] {
    const char* v = std::getenv("SFT_PROFILE");
    return v && std::strcmp(v, "cpu") == 0;
  }();
  return on;
}

double clock_s() {
  if (!cpu_clock()) return now_s();
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

}  // namespace

bool profiling() {
  static const bool on = [] {
    const char* v = std::getenv("SFT_PROFILE");
    return v && *v && std::strcmp(v, "0") != 0;
  }();
  return on;
}

ScopedOp::ScopedOp(const char* name, std::string (*detail)(const void*), const void* ctx)
    : name_(name), detail_(detail), ctx_(ctx) {
  if (!profiling() || depth++ > 0) return;
  count_forward_pass(name);
  start_ = clock_s();
}

ScopedOp::~ScopedOp() {
  if (!profiling()) return;
  --depth;
  if (start_ < 0) return;
  const double dt = clock_s() - start_;
  Entry& e = table()[detail_ ? std::string(name_) + " " + detail_(ctx_) : std::string(name_)];
  e.calls += 1;
  e.seconds += dt;
}

std::vector<OpTime> op_profile() {
  std::vector<OpTime> rows;
  if (!profiling()) return rows;
  for (const auto& [op, e] : table()) rows.push_back({op, e.calls, e.seconds});
  std::sort(rows.begin(), rows.end(),
            [](const OpTime& a, const OpTime& b) { return a.seconds > b.seconds; });
  return rows;
}

std::string op_profile_table() {
  const std::vector<OpTime> rows = op_profile();
  if (rows.empty()) return "";
  double total = 0;
  for (const OpTime& r : rows) total += r.seconds;
  std::string out = std::string(cpu_clock() ? "op CPU time of the calling thread" : "op time") +
                    " (SFT_PROFILE): " + std::to_string(total) + " s in ops\n";
  char line[256];
  for (const OpTime& r : rows) {
    std::snprintf(line, sizeof line, "  %6.2f%%  %9.4f s  %8lld calls  %s\n",
                  100.0 * r.seconds / total, r.seconds, static_cast<long long>(r.calls),
                  r.op.c_str());
    out += line;
  }
  return out;
}

void reset_op_profile() {
  table().clear();
}

}  // namespace sft::ops
