// The tree-walking interpreter: renders a parsed template against a context, with the
// semantics of jinja2's ImmutableSandboxedEnvironment as transformers configures it.
//
// Scoping follows jinja2: each for-loop iteration and each macro call get a fresh scope
// (a `set` inside them does not leak out), `if` does not; namespaces are shared objects,
// so `set ns.x = ...` is how state crosses scopes. Undefined is jinja2's default
// Undefined (prints '', iterates empty, is falsy; arithmetic, calls and attribute access
// on it raise UndefinedError naming what was missing).
//
// {% generation %} bodies record [start, end) byte ranges of the output, as transformers'
// AssistantTracker does in characters.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "chat/jinja_ast.h"
#include "chat/jinja_error.h"
#include "chat/jinja_value.h"

namespace sft::jinja {

struct ByteSpan {
  size_t begin = 0;
  size_t end = 0;
};

class Interpreter {
 public:
  // `context` holds the template's variables (messages, tools, bos_token, ...); `globals`
  // (functions such as raise_exception) are looked up after every scope.
  explicit Interpreter(ValueDict context, const ValueDict* globals = nullptr);

  // Renders the template; spans of {% generation %} blocks go to generation_spans().
  std::string render(const NodeList& body);
  const std::vector<ByteSpan>& generation_spans() const { return spans_; }

  Value eval(const Node& node);
  Value call(const Value& callee, CallArgs& args);
  // Renders `body` into a fresh string (macros, block set, filter blocks, caller()).
  std::string capture(const NodeList& body);

  // jinja2's getattr / getitem with the sandbox's rules.
  Value get_attr(const Value& obj, const std::string& name);
  Value get_item(const Value& obj, const Value& key);

  // Variables: lookup walks scopes innermost first; assign writes the innermost scope.
  const Value* lookup(std::string_view name) const;
  void assign(const std::string& name, Value value);

  // A fresh innermost scope for as long as the guard lives: popped on every way out,
  // exceptions included, so no caller pairs push and pop by hand.
  class Scope {
   public:
    explicit Scope(Interpreter& in) : in_(in) { in_.scopes_.emplace_back(); }
    ~Scope() { in_.scopes_.pop_back(); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Interpreter& in_;
  };

 private:
  enum class Flow { kNormal, kBreak, kContinue };
  // Statements (jinja_statements.cpp): exec dispatches on the node's kind to one exec_*.
  Flow exec_body(const NodeList& body);
  Flow exec(const Node& node);
  Flow exec_if(const Node& node);
  Flow exec_for(const Node& node);
  Flow exec_with(const Node& node);
  void exec_set(const Node& node);
  void exec_call_block(const Node& node);
  void exec_filter_block(const Node& node);
  void exec_generation(const Node& node);
  const ValueList& for_items(const Node& node, const Value& iterable, ValueList& owned);
  void assign_target(const AssignTarget& target, const Value& value, const Node& at);
  void bind_macro_arguments(const Node& macro, CallArgs& args);
  void bind_caller_arguments(const Node& block, CallArgs& args);
  Value eval_inner(const Node& node);
  Value eval_call(const Node& node);
  Value eval_binary(const Node& node);
  Value eval_compare(const Node& node);
  Value apply_filter_chain(const Node& chain, Value operand);
  void collect_args(const Node& node, CallArgs& args);
  Value make_macro(const Node& node);

  std::vector<ValueDict> scopes_;
  const ValueDict* globals_ = nullptr;
  std::string* out_ = nullptr;
  std::vector<ByteSpan> spans_;
  int depth_ = 0;
};

// Python iteration of a value as jinja2's for does it: list/tuple items, dict keys,
// string characters; Undefined is empty. Throws TypeError for other values.
ValueList iterate(const Value& v);

// Characters of a UTF-8 string as separate strings (Python's indexing unit).
std::vector<std::string_view> utf8_chars(std::string_view s);

// Filters, tests and methods (jinja_filters.cpp, jinja_tests.cpp, jinja_methods.cpp).
Value apply_filter(Interpreter& in, const std::string& name, Value operand, CallArgs& args);
bool apply_test(Interpreter& in, const std::string& name, const Value& operand, CallArgs& args);
// Whether obj has a Python attribute `name` that is a method (and the sandbox's verdict).
bool has_method(const Value& obj, std::string_view name);
Value call_method(Interpreter& in, const Value& obj, const std::string& name, CallArgs& args);

// Helpers shared by the interpreter, operators, filters, tests and methods.
[[noreturn]] void type_error(const std::string& message);
// jinja2's UndefinedError for using `u` (arithmetic, call, attribute): its hint, or
// "undefined value" when it carries none.
[[noreturn]] void undefined_error(const Value& u);
// undefined_error(v) when v is Undefined.
void check_defined(const Value& v);
Value undefined_attr(const Value& obj, const std::string& name);
int64_t python_len(const Value& v);

}  // namespace sft::jinja
