// jinja2's tests ("x is defined", "n is divisibleby 3", "a is in b"), with Python's
// isinstance answers (bool is a number; str, list, tuple and dict are sequences).
// kTests, at the end, is the one list of names: has_test (the parser's check) and apply_test
// (the interpreter's call) both read it.
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

// The comparison tests and their aliases.
bool equal_test(const Value& v, CallArgs& args, const std::string& name) {
  return values_equal(v, need_arg(args, name));
}
bool not_equal_test(const Value& v, CallArgs& args, const std::string& name) {
  return !values_equal(v, need_arg(args, name));
}
bool less_test(const Value& v, CallArgs& args, const std::string& name) {
  return compare("<", v, need_arg(args, name));
}
bool less_equal_test(const Value& v, CallArgs& args, const std::string& name) {
  return compare("<=", v, need_arg(args, name));
}
bool greater_test(const Value& v, CallArgs& args, const std::string& name) {
  return compare(">", v, need_arg(args, name));
}
bool greater_equal_test(const Value& v, CallArgs& args, const std::string& name) {
  return compare(">=", v, need_arg(args, name));
}

// odd / even, with Python's % on floats and bools.
bool parity_is(const Value& v, bool odd) {
  check_defined(v);
  if (!v.is_int() && !v.is_bool()) {
    if (v.is_float()) {
      double r = std::fmod(v.as_float(), 2.0);
      return odd ? r == 1.0 || r == -1.0 : r == 0.0;
    }
    type_error("not all arguments converted during string formatting");
  }
  int64_t r = ((v.as_int() % 2) + 2) % 2;
  return odd ? r == 1 : r == 0;
}

bool divisibleby_test(const Value& v, CallArgs& args, const std::string& name) {
  const Value& d = need_arg(args, name);
  if (!v.is_number() || !d.is_number()) type_error("unsupported operand type(s) for %");
  if (v.is_float() || d.is_float()) {
    if (d.as_float() == 0) throw TemplateError(ErrorClass::kZeroDivision, "float modulo");
    return std::fmod(v.as_float(), d.as_float()) == 0;
  }
  if (d.as_int() == 0) throw TemplateError(ErrorClass::kZeroDivision, "integer modulo by zero");
  return v.as_int() % d.as_int() == 0;
}

bool sameas_test(const Value& v, CallArgs& args, const std::string& name) {
  return v.same_object(need_arg(args, name));
}
bool in_test(const Value& v, CallArgs& args, const std::string& name) {
  return contains(v, need_arg(args, name));
}
bool lower_test(const Value& v, CallArgs&, const std::string&) {
  return v.is_string() && pystr::lower(v.str()) == v.str();
}
bool upper_test(const Value& v, CallArgs&, const std::string&) {
  return v.is_string() && pystr::upper(v.str()) == v.str();
}
// Whether a string names a filter / a test the engine knows.
bool filter_test(const Value& v, CallArgs&, const std::string&) {
  return v.is_string() && has_filter(v.str());
}
bool test_test(const Value& v, CallArgs&, const std::string&) {
  return v.is_string() && has_test(v.str());
}

// `name` is the name the template used, for errors (aliases such as eq / == share one entry).
using TestFn = bool (*)(const Value& operand, CallArgs& args, const std::string& name);

struct Test {
  std::string_view name;
  TestFn apply;
};

// Every test the engine knows; has_test and apply_test both read this table.
constexpr Test kTests[] = {
    {"defined", [](const Value& v, CallArgs&, const std::string&) { return !v.is_undefined(); }},
    {"undefined", [](const Value& v, CallArgs&, const std::string&) { return v.is_undefined(); }},
    {"none", [](const Value& v, CallArgs&, const std::string&) { return v.is_none(); }},
    {"string", [](const Value& v, CallArgs&, const std::string&) { return v.is_string(); }},
    {"number", [](const Value& v, CallArgs&, const std::string&) { return v.is_number(); }},
    {"integer", [](const Value& v, CallArgs&, const std::string&) { return v.is_int(); }},
    {"float", [](const Value& v, CallArgs&, const std::string&) { return v.is_float(); }},
    {"boolean", [](const Value& v, CallArgs&, const std::string&) { return v.is_bool(); }},
    {"true",
     [](const Value& v, CallArgs&, const std::string&) { return v.is_bool() && v.as_bool(); }},
    {"false",
     [](const Value& v, CallArgs&, const std::string&) { return v.is_bool() && !v.as_bool(); }},
    {"mapping", [](const Value& v, CallArgs&, const std::string&) { return v.is_mapping(); }},
    {"sequence",
     [](const Value& v, CallArgs&, const std::string&) {
       return v.is_string() || v.is_sequence() || v.is_mapping();
     }},
    {"iterable",
     [](const Value& v, CallArgs&, const std::string&) {
       return v.is_string() || v.is_sequence() || v.is_mapping() || v.is_undefined();
     }},
    {"callable", [](const Value& v, CallArgs&, const std::string&) { return v.is_callable(); }},
    {"odd", [](const Value& v, CallArgs&, const std::string&) { return parity_is(v, true); }},
    {"even", [](const Value& v, CallArgs&, const std::string&) { return parity_is(v, false); }},
    {"divisibleby", divisibleby_test},
    {"equalto", equal_test},
    {"eq", equal_test},
    {"==", equal_test},
    {"ne", not_equal_test},
    {"!=", not_equal_test},
    {"lt", less_test},
    {"<", less_test},
    {"le", less_equal_test},
    {"<=", less_equal_test},
    {"gt", greater_test},
    {">", greater_test},
    {"ge", greater_equal_test},
    {">=", greater_equal_test},
    {"greaterthan", greater_test},
    {"lessthan", less_test},
    {"sameas", sameas_test},
    {"in", in_test},
    {"lower", lower_test},
    {"upper", upper_test},
    {"escaped", [](const Value&, CallArgs&, const std::string&) { return false; }},
    {"filter", filter_test},
    {"test", test_test},
};

const Test* find_test(std::string_view name) {
  for (const Test& t : kTests) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

}  // namespace

bool has_test(std::string_view name) {
  return find_test(name) != nullptr;
}

bool apply_test(Interpreter&, const std::string& name, const Value& v, CallArgs& args) {
  const Test* t = find_test(name);
  if (t == nullptr) throw TemplateError(ErrorClass::kSyntax, "No test named '" + name + "'.");
  return t->apply(v, args, name);
}

}  // namespace sft::jinja
