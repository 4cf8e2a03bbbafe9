// The interpreter's core: scopes, output capture, expression evaluation, attribute and item
// access, and the Python helpers (iteration, len, slicing, errors) that operators, filters,
// tests and methods share. Statements are in jinja_statements.cpp.
#include "chat/jinja_interpreter.h"

#include <cmath>

namespace sft::jinja {

namespace {

std::string object_type_repr(const Value& obj) {
  if (obj.is_none()) return "None";
  return obj.type_name() + " object";
}

// Points `out` at another string for as long as it lives, then back where it pointed.
class OutputRedirect {
 public:
  OutputRedirect(std::string*& out, std::string* to) : out_(out), saved_(out) { out_ = to; }
  ~OutputRedirect() { out_ = saved_; }
  OutputRedirect(const OutputRedirect&) = delete;
  OutputRedirect& operator=(const OutputRedirect&) = delete;

 private:
  std::string*& out_;
  std::string* saved_;
};

// Python's slice index normalisation for a sequence of length n.
void slice_indices(int64_t n, const Value& start, const Value& stop, const Value& step_v,
                   int64_t* b, int64_t* e, int64_t* s) {
  int64_t step = step_v.is_none() || step_v.is_undefined() ? 1 : step_v.as_int();
  if (step == 0) throw TemplateError(ErrorClass::kValue, "slice step cannot be zero");
  auto norm = [&](const Value& v, int64_t def, bool is_start) {
    if (v.is_none() || v.is_undefined()) return def;
    if (!v.is_int() && !v.is_bool())
      type_error("slice indices must be integers or None or have an __index__ method");
    int64_t i = v.as_int();
    if (i < 0) {
      i += n;
      if (i < 0) i = step < 0 ? -1 : 0;
    } else if (i >= n) {
      i = step < 0 ? n - 1 : n;
    }
    (void)is_start;
    return i;
  };
  *s = step;
  *b = norm(start, step < 0 ? n - 1 : 0, true);
  *e = norm(stop, step < 0 ? -1 : n, false);
}

Value slice_value(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  int64_t b, e, s;
  if (obj.is_sequence()) {
    const ValueList& items = obj.items();
    slice_indices(static_cast<int64_t>(items.size()), start, stop, step, &b, &e, &s);
    ValueList out;
    for (int64_t i = b; s > 0 ? i < e : i > e; i += s) out.push_back(items[static_cast<size_t>(i)]);
    return obj.kind() == Kind::kTuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
  }
  if (obj.is_string()) {
    std::vector<std::string_view> chars = utf8_chars(obj.str());
    slice_indices(static_cast<int64_t>(chars.size()), start, stop, step, &b, &e, &s);
    std::string out;
    for (int64_t i = b; s > 0 ? i < e : i > e; i += s) out += chars[static_cast<size_t>(i)];
    return Value(std::move(out));
  }
  check_defined(obj);
  type_error("'" + obj.type_name() + "' object is not subscriptable");
}

}  // namespace

void type_error(const std::string& message) {
  throw TemplateError(ErrorClass::kType, message);
}

void undefined_error(const Value& u) {
  const std::string& hint = u.undefined_hint();
  throw TemplateError(ErrorClass::kUndefined, hint.empty() ? "undefined value" : hint);
}

void check_defined(const Value& v) {
  if (v.is_undefined()) undefined_error(v);
}

Value undefined_attr(const Value& obj, const std::string& name) {
  return Value::undefined("'" + object_type_repr(obj) + "' has no attribute '" + name + "'");
}

std::vector<std::string_view> utf8_chars(std::string_view s) {
  std::vector<std::string_view> out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    n = std::min(n, s.size() - i);
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

int64_t python_len(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return 0;
    case Kind::kString: {
      int64_t n = 0;
      for (char c : v.str()) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
      return n;
    }
    case Kind::kList:
    case Kind::kTuple:
      return static_cast<int64_t>(v.items().size());
    case Kind::kDict:
      return static_cast<int64_t>(v.entries().items.size());
    default:
      type_error("object of type '" + v.type_name() + "' has no len()");
  }
}

ValueList iterate(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return {};
    case Kind::kList:
    case Kind::kTuple:
      return v.items();
    case Kind::kDict: {
      ValueList keys;
      for (const auto& [k, _] : v.entries().items) keys.emplace_back(k);
      return keys;
    }
    case Kind::kString: {
      ValueList chars;
      for (std::string_view c : utf8_chars(v.str())) chars.emplace_back(std::string(c));
      return chars;
    }
    default:
      type_error("'" + v.type_name() + "' object is not iterable");
  }
}

Interpreter::Interpreter(ValueDict context, const ValueDict* globals) : globals_(globals) {
  scopes_.reserve(16);
  scopes_.push_back(std::move(context));
}

std::string Interpreter::render(const NodeList& body) {
  return capture(body);
}

std::string Interpreter::capture(const NodeList& body) {
  std::string buf;
  OutputRedirect redirect(out_, &buf);
  exec_body(body);
  return buf;
}

const Value* Interpreter::lookup(std::string_view name) const {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    if (const Value* v = it->find(name)) return v;
  }
  return globals_ ? globals_->find(name) : nullptr;
}

void Interpreter::assign(const std::string& name, Value value) {
  scopes_.back().set(name, std::move(value));
}

Value Interpreter::eval(const Node& node) {
  try {
    return eval_inner(node);
  } catch (const TemplateError& e) {
    if (e.has_location()) throw;
    throw e.located(node.line, node.column);
  }
}

Value Interpreter::eval_inner(const Node& node) {
  switch (node.kind) {
    case NodeKind::kConst:
      return node.value;
    case NodeKind::kName: {
      if (const Value* v = lookup(node.name)) return *v;
      return Value::undefined("'" + node.name + "' is undefined");
    }
    case NodeKind::kList:
    case NodeKind::kTuple: {
      ValueList items;
      items.reserve(node.list.size());
      for (const NodePtr& e : node.list) items.push_back(eval(*e));
      return node.kind == NodeKind::kList ? Value::list(std::move(items))
                                          : Value::tuple(std::move(items));
    }
    case NodeKind::kDict: {
      ValueDict d;
      for (size_t i = 0; i + 1 < node.list.size(); i += 2) {
        Value k = eval(*node.list[i]);
        d.set(k.is_string() ? k.str() : k.to_str(), eval(*node.list[i + 1]));
      }
      return Value::dict(std::move(d));
    }
    case NodeKind::kGetAttr:
      return get_attr(eval(*node.a), node.name);
    case NodeKind::kGetItem: {
      Value obj = eval(*node.a);
      if (node.b->kind == NodeKind::kSlice) {
        const Node& s = *node.b;
        return slice_value(obj, s.a ? eval(*s.a) : Value::none(), s.b ? eval(*s.b) : Value::none(),
                           s.c ? eval(*s.c) : Value::none());
      }
      return get_item(obj, eval(*node.b));
    }
    case NodeKind::kCall:
      return eval_call(node);
    case NodeKind::kFilter: {
      Value operand = eval(*node.a);
      CallArgs args;
      collect_args(node, args);
      return apply_filter(*this, node.name, std::move(operand), args);
    }
    case NodeKind::kTest: {
      Value operand = eval(*node.a);
      CallArgs args;
      collect_args(node, args);
      return Value(apply_test(*this, node.name, operand, args));
    }
    case NodeKind::kUnary: {
      Value v = eval(*node.a);
      if (node.name == "not") return Value(!v.truthy());
      check_defined(v);
      if (!v.is_number()) {
        type_error("bad operand type for unary " + node.name + ": '" + v.type_name() + "'");
      }
      if (node.name == "+") return v.is_float() ? v : Value(v.as_int());
      return v.is_float() ? Value(-v.as_float()) : Value(-v.as_int());
    }
    case NodeKind::kBinary:
      return eval_binary(node);
    case NodeKind::kCompare:
      return eval_compare(node);
    case NodeKind::kCondExpr:
      if (eval(*node.a).truthy()) return eval(*node.b);
      if (node.c) return eval(*node.c);
      return Value::undefined("the inline if-expression on line " + std::to_string(node.line) +
                              " evaluated to false and no else section was defined.");
    default:
      throw TemplateError(ErrorClass::kRuntime, "unexpected expression node");
  }
}

void Interpreter::collect_args(const Node& node, CallArgs& args) {
  args.positional.reserve(node.list.size());
  for (const NodePtr& a : node.list) args.positional.push_back(eval(*a));
  for (const auto& [k, v] : node.kwargs) args.keyword.emplace_back(k, eval(*v));
  if (node.dyn_args) {
    for (Value& v : iterate(eval(*node.dyn_args))) args.positional.push_back(std::move(v));
  }
  if (node.dyn_kwargs) {
    Value d = eval(*node.dyn_kwargs);
    if (!d.is_mapping()) type_error("argument after ** must be a mapping");
    for (const auto& [k, v] : d.entries().items) args.keyword.emplace_back(k, v);
  }
}

Value Interpreter::eval_call(const Node& node) {
  // obj.method(...) calls the method directly instead of building a bound value first.
  if (node.a->kind == NodeKind::kGetAttr) {
    Value obj = eval(*node.a->a);
    if (has_method(obj, node.a->name)) {
      CallArgs args;
      collect_args(node, args);
      return call_method(*this, obj, node.a->name, args);
    }
    Value callee = get_attr(obj, node.a->name);
    CallArgs args;
    collect_args(node, args);
    return call(callee, args);
  }
  Value callee = eval(*node.a);
  CallArgs args;
  collect_args(node, args);
  return call(callee, args);
}

Value Interpreter::call(const Value& callee, CallArgs& args) {
  if (callee.is_undefined()) undefined_error(callee);
  if (!callee.is_callable()) type_error("'" + callee.type_name() + "' object is not callable");
  return callee.callable().fn(*this, args);
}

Value Interpreter::get_attr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) undefined_error(obj);
  if (obj.kind() == Kind::kNamespace) {
    if (const Value* v = obj.entries().find(name)) return *v;
    return undefined_attr(obj, name);
  }
  if (has_method(obj, name)) {
    Value self = obj;
    std::string method = name;
    return Value::function(name, [self, method](Interpreter& in, CallArgs& args) {
      return call_method(in, self, method, args);
    });
  }
  if (obj.is_mapping()) {
    if (const Value* v = obj.entries().find(name)) return *v;
  }
  return undefined_attr(obj, name);
}

Value Interpreter::get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) undefined_error(obj);
  switch (obj.kind()) {
    case Kind::kDict:
    case Kind::kNamespace:
      if (key.is_string()) {
        if (const Value* v = obj.entries().find(key.str())) return *v;
        if (obj.kind() == Kind::kNamespace) break;
        return get_attr(obj, key.str());
      }
      break;
    case Kind::kList:
    case Kind::kTuple:
      if (key.is_int() || key.is_bool()) {
        int64_t n = static_cast<int64_t>(obj.items().size());
        int64_t i = key.as_int();
        if (i < 0) i += n;
        if (i >= 0 && i < n) return obj.items()[static_cast<size_t>(i)];
        return Value::undefined(obj.type_name() + " object has no element " + key.repr());
      }
      break;
    case Kind::kString:
      if (key.is_int() || key.is_bool()) {
        std::vector<std::string_view> chars = utf8_chars(obj.str());
        int64_t n = static_cast<int64_t>(chars.size());
        int64_t i = key.as_int();
        if (i < 0) i += n;
        if (i >= 0 && i < n) return Value(std::string(chars[static_cast<size_t>(i)]));
        return Value::undefined("str object has no element " + key.repr());
      }
      break;
    default:
      break;
  }
  if (key.is_string()) return get_attr(obj, key.str());
  return Value::undefined(object_type_repr(obj) + " has no element " + key.repr());
}

Value Interpreter::apply_filter_chain(const Node& chain, Value operand) {
  // The chain is nested with the innermost filter first applied; rebuild the order.
  std::vector<const Node*> filters;
  for (const Node* n = &chain; n; n = n->a.get()) filters.push_back(n);
  for (auto it = filters.rbegin(); it != filters.rend(); ++it) {
    CallArgs args;
    collect_args(**it, args);
    operand = apply_filter(*this, (*it)->name, std::move(operand), args);
  }
  return operand;
}

}  // namespace sft::jinja
