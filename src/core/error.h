// Error policy (one for the whole project).
//
// Every failure is an exception derived from sft::Error whose message starts with
// the component in brackets: "[safetensors] ...". Errors about a user's file name
// the file, the place inside it (line, row, tensor, column) and end with a hint,
// so a user can fix the input without reading our code. Exceptions are caught once,
// in cli/main.cpp, which prints the message and exits non-zero.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace sft {

class Error : public std::runtime_error {
 public:
  Error(std::string_view component, std::string_view message);

  const std::string& component() const { return component_; }

 private:
  std::string component_;
};

// Where in a user's file a problem is. `place` may be empty when the whole file is at fault.
struct FileLocation {
  std::string file;
  std::string place;  // e.g. "line 3, column 7", "tensor 'model.norm.weight'"
};

// "<file>: <place>: <problem> (hint: <hint>)" — the shape of every user-file error message.
std::string describe_file_problem(const FileLocation& where, std::string_view problem,
                                  std::string_view hint);

// Throws sft::Error for a problem in a user's file.
[[noreturn]] void fail_in_file(std::string_view component, const FileLocation& where,
                               std::string_view problem, std::string_view hint);

// Throws sft::Error for a problem not tied to one file (bad argument, environment).
[[noreturn]] void fail(std::string_view component, std::string_view message);

// The OS error for `errno`, e.g. "No such file or directory".
std::string errno_text(int err);

}  // namespace sft
