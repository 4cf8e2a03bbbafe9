// Terminal width for progress lines (see progress_width.h).
#include "core/progress_width.h"

#include <sys/ioctl.h>

#include <cstdlib>

namespace sft {

namespace {

bool continuation_byte(char c) {
  return (static_cast<unsigned char>(c) & 0xC0) == 0x80;
}

}  // namespace

int terminal_columns(int fd) {
  winsize size{};
  if (ioctl(fd, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  if (const char* env = std::getenv("COLUMNS")) {
    const long columns = std::strtol(env, nullptr, 10);
    if (columns > 0 && columns < 100000) return static_cast<int>(columns);
  }
  return 80;
}

int progress_line_limit(int columns) {
  return columns > 1 ? columns - 1 : 1;
}

int display_width(const std::string& text) {
  int width = 0;
  for (char c : text) width += continuation_byte(c) ? 0 : 1;
  return width;
}

std::string fit_to_width(const std::string& text, int limit) {
  int width = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (continuation_byte(text[i])) continue;
    if (++width > limit) return text.substr(0, i);
  }
  return text;
}

std::string fit_bar_line(const std::function<std::string(int)>& draw, int full, int min_width,
                         int limit) {
  std::string line = draw(full);
  const int over = display_width(line) - limit;
  if (over > 0) line = draw(full - over >= min_width ? full - over : 0);
  return fit_to_width(line, limit);
}

}  // namespace sft
