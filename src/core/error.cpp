#include "core/error.h"

#include <cstring>

namespace sft {

namespace {
std::string prefixed(std::string_view component, std::string_view message) {
  std::string out;
  out.reserve(component.size() + message.size() + 3);
  out.append("[").append(component).append("] ").append(message);
  return out;
}
}  // namespace

Error::Error(std::string_view component, std::string_view message)
    : std::runtime_error(prefixed(component, message)), component_(component) {}

std::string describe_file_problem(const FileLocation& where, std::string_view problem,
                                  std::string_view hint) {
  std::string out = where.file;
  if (!where.place.empty()) out.append(": ").append(where.place);
  out.append(": ").append(problem);
  if (!hint.empty()) out.append(" (hint: ").append(hint).append(")");
  return out;
}

void fail_in_file(std::string_view component, const FileLocation& where, std::string_view problem,
                  std::string_view hint) {
  throw Error(component, describe_file_problem(where, problem, hint));
}

void fail(std::string_view component, std::string_view message) {
  throw Error(component, message);
}

std::string errno_text(int err) {
  char buf[256];
  // GNU strerror_r may return a static string instead of filling buf.
  const char* text = strerror_r(err, buf, sizeof buf);
  return text;
}

}  // namespace sft
