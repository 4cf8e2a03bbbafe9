// Python's operators as jinja2 evaluates them: arithmetic with int/float promotion,
// floor division and modulo with Python's signs, str/list concatenation and repetition,
// "%" formatting, "~" concatenation of str() values, and comparison chains.
#include <cmath>

#include "chat/jinja_interpreter.h"

namespace sft::jinja {

namespace {

Value numeric_binary(const std::string& op, const Value& a, const Value& b) {
  bool ints = !a.is_float() && !b.is_float();
  if (op == "+") return ints ? Value(a.as_int() + b.as_int()) : Value(a.as_float() + b.as_float());
  if (op == "-") return ints ? Value(a.as_int() - b.as_int()) : Value(a.as_float() - b.as_float());
  if (op == "*") return ints ? Value(a.as_int() * b.as_int()) : Value(a.as_float() * b.as_float());
  if (op == "/") {
    if (b.as_float() == 0) throw TemplateError(ErrorClass::kZeroDivision, "division by zero");
    return Value(a.as_float() / b.as_float());
  }
  if (op == "//" || op == "%") {
    if (ints) {
      if (b.as_int() == 0)
        throw TemplateError(ErrorClass::kZeroDivision, op == "%"
                                                           ? "integer modulo by zero"
                                                           : "integer division or modulo by zero");
      int64_t x = a.as_int(), y = b.as_int();
      int64_t q = x / y, r = x % y;
      if (r != 0 && ((r < 0) != (y < 0))) {
        --q;
        r += y;
      }
      return op == "//" ? Value(q) : Value(r);
    }
    double x = a.as_float(), y = b.as_float();
    if (y == 0) throw TemplateError(ErrorClass::kZeroDivision, "float floor division by zero");
    double q = std::floor(x / y);
    double r = std::fmod(x, y);
    if (r != 0 && ((r < 0) != (y < 0))) r += y;
    return op == "//" ? Value(q) : Value(r);
  }
  if (op == "**") {
    if (ints && b.as_int() >= 0) {
      int64_t r = 1, base = a.as_int();
      for (int64_t i = 0; i < b.as_int(); ++i) r *= base;
      return Value(r);
    }
    return Value(std::pow(a.as_float(), b.as_float()));
  }
  type_error("bad operator");
}

}  // namespace

Value Interpreter::eval_binary(const Node& node) {
  const std::string& op = node.name;
  if (op == "and") {
    Value a = eval(*node.a);
    return a.truthy() ? eval(*node.b) : a;
  }
  if (op == "or") {
    Value a = eval(*node.a);
    return a.truthy() ? a : eval(*node.b);
  }
  Value a = eval(*node.a);
  Value b = eval(*node.b);
  if (op == "~") {
    std::string s;
    a.append_str(s);
    b.append_str(s);
    return Value(std::move(s));
  }
  check_defined(a);
  check_defined(b);
  if (a.is_number() && b.is_number()) return numeric_binary(op, a, b);
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      std::string s;
      s.reserve(a.str().size() + b.str().size());
      s += a.str();
      s += b.str();
      return Value(std::move(s));
    }
    if (a.is_sequence() && a.kind() == b.kind()) {
      ValueList items = a.items();
      items.insert(items.end(), b.items().begin(), b.items().end());
      return a.kind() == Kind::kTuple ? Value::tuple(std::move(items))
                                      : Value::list(std::move(items));
    }
    if (a.is_string())
      type_error("can only concatenate str (not \"" + b.type_name() + "\") to str");
    if (a.kind() == Kind::kList)
      type_error("can only concatenate list (not \"" + b.type_name() + "\") to list");
  }
  if (op == "*") {
    const Value* seq = a.is_number() ? &b : &a;
    const Value* count = a.is_number() ? &a : &b;
    if ((count->is_int() || count->is_bool()) && (seq->is_string() || seq->is_sequence())) {
      int64_t k = count->as_int();
      if (seq->is_string()) {
        std::string s;
        for (int64_t i = 0; i < k; ++i) s += seq->str();
        return Value(std::move(s));
      }
      ValueList items;
      for (int64_t i = 0; i < k; ++i)
        items.insert(items.end(), seq->items().begin(), seq->items().end());
      return seq->kind() == Kind::kTuple ? Value::tuple(std::move(items))
                                         : Value::list(std::move(items));
    }
  }
  if (op == "%" && a.is_string()) {
    CallArgs args;
    if (b.kind() == Kind::kTuple) {
      args.positional = b.items();
    } else {
      args.positional.push_back(b);
    }
    return call_method(*this, a, "__mod__", args);
  }
  type_error("unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" +
             b.type_name() + "'");
}

Value Interpreter::eval_compare(const Node& node) {
  Value left = eval(*node.a);
  for (size_t i = 0; i < node.strs.size(); ++i) {
    Value right = eval(*node.list[i]);
    const std::string& op = node.strs[i];
    bool r;
    if (op == "==") {
      r = values_equal(left, right);
    } else if (op == "!=") {
      r = !values_equal(left, right);
    } else if (op == "in" || op == "notin") {
      Value args_holder;
      CallArgs args;
      args.positional.push_back(right);
      r = apply_test(*this, "in", left, args);
      if (op == "notin") r = !r;
    } else {
      check_defined(left);
      check_defined(right);
      bool ok;
      bool lt = values_less(left, right, &ok);
      if (!ok) {
        type_error("'" + op + "' not supported between instances of '" + left.type_name() +
                   "' and '" + right.type_name() + "'");
      }
      bool gt = values_less(right, left, &ok);
      if (op == "<")
        r = lt;
      else if (op == ">")
        r = gt;
      else if (op == "<=")
        r = !gt;
      else
        r = !lt;
    }
    if (!r) return Value(false);
    left = std::move(right);
  }
  return Value(true);
}

}  // namespace sft::jinja
