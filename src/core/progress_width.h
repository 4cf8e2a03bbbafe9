// The width a progress line may take on a terminal, so that a bar redrawn in place never
// wraps: a wrapped line is not erased by the next "\r...\x1b[K" and leaves debris above it.
//
// terminal_columns asks the terminal (TIOCGWINSZ) each time, so a resized window is followed;
// where that fails (a file, a pipe, a terminal that reports 0) $COLUMNS, else 80. Lines are
// cut to columns - 1 characters: writing the last column puts some terminals in their
// pending-wrap state, where the next character would start a new line.
#pragma once

#include <functional>
#include <string>

namespace sft {

// Columns of the terminal on `fd`; $COLUMNS or 80 when it reports none.
int terminal_columns(int fd);

// The most characters a redrawn line may hold on a terminal `columns` wide (at least 1).
int progress_line_limit(int columns);

// Characters of UTF-8 `text` (code points; the progress lines are ASCII but labels may not be).
int display_width(const std::string& text);

// `text` cut to at most `limit` characters, never inside a UTF-8 sequence.
std::string fit_to_width(const std::string& text, int limit);

// A line with a bar, fitted to `limit`: draw(width) with the bar `full` wide; when that
// overflows, the bar narrower by the overflow, or draw(0) (no bar) when it would be narrower
// than min_width; then fit_to_width cuts what still overflows.
std::string fit_bar_line(const std::function<std::string(int)>& draw, int full, int min_width,
                         int limit);

}  // namespace sft
