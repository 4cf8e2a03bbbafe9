// jinja2's tests ("x is defined", "n is divisibleby 3", "a is in b"), with Python's
// isinstance answers (bool is a number; str, list, tuple and dict are sequences).
#include <cmath>
#include <string_view>

#include "chat/jinja_interpreter.h"
#include "chat/jinja_parser.h"
#include "chat/jinja_strings.h"

namespace sft::jinja {

namespace {

const Value& need_arg(const CallArgs& args, const std::string& test) {
  if (args.positional.empty()) {
    if (!args.keyword.empty()) return args.keyword[0].second;
    type_error(test + "() missing 1 required positional argument");
  }
  return args.positional[0];
}

bool compare(const std::string& op, const Value& a, const Value& b) {
  if (a.is_undefined() || b.is_undefined()) undefined_error(a.is_undefined() ? a : b);
  bool ok;
  bool lt = values_less(a, b, &ok);
  if (!ok) {
    type_error("'" + op + "' not supported between instances of '" + a.type_name() + "' and '" +
               b.type_name() + "'");
  }
  bool gt = values_less(b, a, &ok);
  if (op == "<") return lt;
  if (op == ">") return gt;
  if (op == "<=") return !gt;
  return !lt;
}

bool contains(const Value& needle, const Value& hay) {
  switch (hay.kind()) {
    case Kind::kString:
      if (!needle.is_string()) {
        if (needle.is_undefined()) return true;  // '' in s
        type_error("'in <string>' requires string as left operand, not " + needle.type_name());
      }
      return hay.str().find(needle.str()) != std::string::npos;
    case Kind::kList:
    case Kind::kTuple:
      for (const Value& v : hay.items()) {
        if (values_equal(v, needle)) return true;
      }
      return false;
    case Kind::kDict:
      return needle.is_string() && hay.entries().find(needle.str()) != nullptr;
    case Kind::kUndefined:
      return false;
    default:
      type_error("argument of type '" + hay.type_name() + "' is not iterable");
  }
}

}  // namespace

bool has_test(std::string_view name) {
  static const char* kNames[] = {
      "defined", "undefined", "none",        "string",   "number",   "integer",  "float",
      "boolean", "true",      "false",       "mapping",  "sequence", "iterable", "callable",
      "odd",     "even",      "divisibleby", "equalto",  "eq",       "==",       "ne",
      "!=",      "lt",        "<",           "le",       "<=",       "gt",       ">",
      "ge",      ">=",        "greaterthan", "lessthan", "sameas",   "in",       "lower",
      "upper",   "escaped",   "filter",      "test"};
  for (const char* n : kNames) {
    if (name == n) return true;
  }
  return false;
}

bool apply_test(Interpreter&, const std::string& name, const Value& v, CallArgs& args) {
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.is_int();
  if (name == "float") return v.is_float();
  if (name == "boolean") return v.is_bool();
  if (name == "true") return v.is_bool() && v.as_bool();
  if (name == "false") return v.is_bool() && !v.as_bool();
  if (name == "mapping") return v.is_mapping();
  if (name == "sequence") return v.is_string() || v.is_sequence() || v.is_mapping();
  if (name == "iterable")
    return v.is_string() || v.is_sequence() || v.is_mapping() || v.is_undefined();
  if (name == "callable") return v.is_callable();
  if (name == "escaped") return false;
  if (name == "odd" || name == "even") {
    check_defined(v);
    if (!v.is_int() && !v.is_bool()) {
      if (v.is_float()) {
        double r = std::fmod(v.as_float(), 2.0);
        return name == "odd" ? r == 1.0 || r == -1.0 : r == 0.0;
      }
      type_error("not all arguments converted during string formatting");
    }
    int64_t r = ((v.as_int() % 2) + 2) % 2;
    return name == "odd" ? r == 1 : r == 0;
  }
  if (name == "divisibleby") {
    const Value& d = need_arg(args, name);
    if (!v.is_number() || !d.is_number()) type_error("unsupported operand type(s) for %");
    if (v.is_float() || d.is_float()) {
      if (d.as_float() == 0) throw TemplateError(ErrorClass::kZeroDivision, "float modulo");
      return std::fmod(v.as_float(), d.as_float()) == 0;
    }
    if (d.as_int() == 0) throw TemplateError(ErrorClass::kZeroDivision, "integer modulo by zero");
    return v.as_int() % d.as_int() == 0;
  }
  if (name == "equalto" || name == "eq" || name == "==")
    return values_equal(v, need_arg(args, name));
  if (name == "ne" || name == "!=") return !values_equal(v, need_arg(args, name));
  if (name == "lt" || name == "<" || name == "lessthan")
    return compare("<", v, need_arg(args, name));
  if (name == "le" || name == "<=") return compare("<=", v, need_arg(args, name));
  if (name == "gt" || name == ">" || name == "greaterthan")
    return compare(">", v, need_arg(args, name));
  if (name == "ge" || name == ">=") return compare(">=", v, need_arg(args, name));
  if (name == "sameas") return v.same_object(need_arg(args, name));
  if (name == "in") return contains(v, need_arg(args, name));
  if (name == "lower") return v.is_string() && pystr::lower(v.str()) == v.str();
  if (name == "upper") return v.is_string() && pystr::upper(v.str()) == v.str();
  if (name == "filter") return v.is_string() && has_filter(v.str());
  if (name == "test") return v.is_string() && has_test(v.str());
  throw TemplateError(ErrorClass::kSyntax, "No test named '" + name + "'.");
}

}  // namespace sft::jinja
