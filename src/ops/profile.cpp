// Per-op timing. See profile.h.
#include "ops/profile.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

#include "core/clock.h"

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
  start_ = now_s();
}

ScopedOp::~ScopedOp() {
  if (!profiling()) return;
  --depth;
  if (start_ < 0) return;
  const double dt = now_s() - start_;
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
  std::string out = "op time (SFT_PROFILE): " + std::to_string(total) + " s in ops\n";
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
