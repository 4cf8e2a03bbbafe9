#include "chat/jinja_error.h"

namespace sft::jinja {

namespace {
std::string with_location(const std::string& message, int line, int column) {
  if (line <= 0) return "template: " + message;
  return "template line " + std::to_string(line) + ", column " + std::to_string(column) + ": " +
         message;
}
}  // namespace

const char* error_class_name(ErrorClass c) {
  switch (c) {
    case ErrorClass::kSyntax:
      return "TemplateSyntaxError";
    case ErrorClass::kUndefined:
      return "UndefinedError";
    case ErrorClass::kType:
      return "TypeError";
    case ErrorClass::kValue:
      return "ValueError";
    case ErrorClass::kIndex:
      return "IndexError";
    case ErrorClass::kSecurity:
      return "SecurityError";
    case ErrorClass::kRaised:
      return "TemplateError";
    case ErrorClass::kZeroDivision:
      return "ZeroDivisionError";
    case ErrorClass::kRuntime:
      return "RuntimeError";
  }
  return "Error";
}

TemplateError::TemplateError(ErrorClass cls, std::string message, int line, int column)
    : Error("chat", with_location(message, line, column)),
      cls_(cls),
      bare_(std::move(message)),
      line_(line),
      column_(column) {}

TemplateError TemplateError::located(int line, int column) const {
  if (has_location()) return *this;
  return TemplateError(cls_, bare_, line, column);
}

}  // namespace sft::jinja
