// Template errors: one exception type carrying the Python exception class it stands for
// (so tests compare with jinja2's behaviour) and where in the template it happened.
//
// Messages read "[chat] template line L, column C: <what>"; for raise_exception(msg) the
// message is the template author's own text, which is what the user must see.
#pragma once

#include <string>

#include "core/error.h"

namespace sft::jinja {

// The Python exception jinja2/transformers would raise in the same situation.
enum class ErrorClass {
  kSyntax,     // jinja2.TemplateSyntaxError
  kUndefined,  // jinja2.UndefinedError
  kType,       // TypeError
  kTypeError = kType,
  kValue,         // ValueError
  kIndex,         // IndexError / KeyError
  kSecurity,      // jinja2.sandbox.SecurityError
  kRaised,        // raise_exception(msg): jinja2.TemplateError
  kZeroDivision,  // ZeroDivisionError
  kRuntime,       // other (e.g. recursion limits)
};

// Python class name for an ErrorClass ("TemplateSyntaxError", "UndefinedError", ...).
const char* error_class_name(ErrorClass c);

class TemplateError : public Error {
 public:
  TemplateError(ErrorClass cls, std::string message, int line = 0, int column = 0);

  ErrorClass error_class() const { return cls_; }
  // The message without the location prefix (for raise_exception: the author's text).
  const std::string& bare_message() const { return bare_; }
  int line() const { return line_; }
  int column() const { return column_; }
  bool has_location() const { return line_ > 0; }
  // A copy located at (line, column) unless already located.
  TemplateError located(int line, int column) const;

 private:
  ErrorClass cls_;
  std::string bare_;
  int line_;
  int column_;
};

}  // namespace sft::jinja
