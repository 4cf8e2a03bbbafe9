// A parsed Jinja template: parse once, render many times (const, thread-safe).
//
// Rendering adds the globals transformers gives chat templates — raise_exception(msg),
// strftime_now(fmt), namespace(...), dict(...), range(...) — under the caller's context.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "chat/jinja_ast.h"
#include "chat/jinja_interpreter.h"

namespace sft::jinja {

class Template {
 public:
  // Throws TemplateError(kSyntax) with line and column.
  explicit Template(std::string source);

  // Renders with `context` as the template's variables; {% generation %} spans are
  // appended to *generation_spans when given.
  std::string render(ValueDict context, std::vector<ByteSpan>* generation_spans = nullptr) const;

  const std::string& source() const { return source_; }
  bool has_generation_blocks() const { return has_generation_; }

 private:
  std::string source_;
  std::shared_ptr<const NodeList> body_;
  bool has_generation_ = false;
};

// The globals every render sees (shared, built once).
const ValueDict& template_globals();

}  // namespace sft::jinja
