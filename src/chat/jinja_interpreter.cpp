#include "chat/jinja_interpreter.h"

#include <cmath>

namespace sft::jinja {

namespace {

constexpr int kMaxDepth = 200;  // macro recursion; Python would hit its own limit

std::string object_type_repr(const Value& obj) {
  if (obj.is_none()) return "None";
  return obj.type_name() + " object";
}

[[noreturn]] void undefined_error(const Value& u) {
  std::string hint = u.undefined_hint();
  throw TemplateError(ErrorClass::kUndefined, hint.empty() ? "undefined value" : hint);
}

void check_defined(const Value& v) {
  if (v.is_undefined()) undefined_error(v);
}

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
  std::string out;
  out_ = &out;
  exec_body(body);
  out_ = nullptr;
  return out;
}

std::string Interpreter::capture(const NodeList& body) {
  std::string buf;
  std::string* saved = out_;
  out_ = &buf;
  try {
    exec_body(body);
  } catch (...) {
    out_ = saved;
    throw;
  }
  out_ = saved;
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

Interpreter::Flow Interpreter::exec_body(const NodeList& body) {
  for (const NodePtr& n : body) {
    Flow f = exec(*n);
    if (f != Flow::kNormal) return f;
  }
  return Flow::kNormal;
}

Interpreter::Flow Interpreter::exec(const Node& node) {
  switch (node.kind) {
    case NodeKind::kData:
      out_->append(node.name);
      return Flow::kNormal;
    case NodeKind::kOutput:
      eval(*node.a).append_str(*out_);
      return Flow::kNormal;
    case NodeKind::kIf:
      for (size_t i = 0; i < node.list.size(); ++i) {
        if (eval(*node.list[i]).truthy()) return exec_body(node.bodies[i]);
      }
      return exec_body(node.else_body);
    case NodeKind::kFor:
      return exec_for(node);
    case NodeKind::kSet:
    case NodeKind::kSetBlock:
      exec_set(node);
      return Flow::kNormal;
    case NodeKind::kMacro:
      assign(node.name, make_macro(node));
      return Flow::kNormal;
    case NodeKind::kCallBlock: {
      const Node* block = &node;
      Value caller = Value::function("caller", [block](Interpreter& in, CallArgs& args) {
        in.push_scope();
        for (size_t i = 0; i < block->strs.size(); ++i) {
          Value v;
          if (i < args.positional.size()) {
            v = args.positional[i];
          } else if (const Value* kw = args.kwarg(block->strs[i])) {
            v = *kw;
          } else if (block->list[i]) {
            v = in.eval(*block->list[i]);
          }
          in.assign(block->strs[i], v);
        }
        std::string s;
        try {
          s = in.capture(block->body);
        } catch (...) {
          in.pop_scope();
          throw;
        }
        in.pop_scope();
        return Value(std::move(s));
      });
      push_scope();
      assign("caller", caller);
      Value result;
      try {
        result = eval(*node.a);
      } catch (...) {
        pop_scope();
        throw;
      }
      pop_scope();
      result.append_str(*out_);
      return Flow::kNormal;
    }
    case NodeKind::kFilterBlock: {
      Value text(capture(node.body));
      apply_filter_chain(*node.c, std::move(text)).append_str(*out_);
      return Flow::kNormal;
    }
    case NodeKind::kWith: {
      std::vector<Value> values;
      for (const NodePtr& v : node.list) values.push_back(eval(*v));
      push_scope();
      for (size_t i = 0; i < node.strs.size(); ++i) assign(node.strs[i], values[i]);
      Flow f;
      try {
        f = exec_body(node.body);
      } catch (...) {
        pop_scope();
        throw;
      }
      pop_scope();
      return f;
    }
    case NodeKind::kBreak:
      return Flow::kBreak;
    case NodeKind::kContinue:
      return Flow::kContinue;
    case NodeKind::kGeneration: {
      // transformers renders the body first (caller()), then records where it lands.
      std::string text = capture(node.body);
      size_t begin = out_->size();
      out_->append(text);
      spans_.push_back({begin, out_->size()});
      return Flow::kNormal;
    }
    default:
      throw TemplateError(ErrorClass::kRuntime, "unexpected node", node.line, node.column);
  }
}

Interpreter::Flow Interpreter::exec_for(const Node& node) {
  Value iterable = eval(*node.a);
  if (iterable.is_none() || iterable.is_number() || iterable.is_callable()) {
    throw TemplateError(ErrorClass::kType, "'" + iterable.type_name() + "' object is not iterable",
                        node.a->line, node.a->column);
  }
  ValueList owned;
  const ValueList* items_ptr = &owned;
  if (iterable.is_sequence()) {
    items_ptr = &iterable.items();  // `iterable` keeps the list alive
  } else {
    owned = iterate(iterable);
  }
  if (node.b) {
    ValueList items = *items_ptr;
    ValueList kept;
    for (const Value& item : items) {
      push_scope();
      assign_target(node.target, item, node);
      bool keep;
      try {
        keep = eval(*node.b).truthy();
      } catch (...) {
        pop_scope();
        throw;
      }
      pop_scope();
      if (keep) kept.push_back(item);
    }
    owned = std::move(kept);
    items_ptr = &owned;
  }
  const ValueList& items = *items_ptr;
  if (items.empty()) return exec_body(node.else_body);

  // One loop object per loop, updated in place (Python's LoopContext is one object too).
  auto index0 = std::make_shared<int64_t>(0);
  const int64_t n = static_cast<int64_t>(items.size());
  const int64_t depth = 1;  // only recursive loops nest depth in jinja2
  ValueDict loop_fields;
  for (const char* k : {"index", "index0", "revindex", "revindex0", "first", "last", "length",
                        "previtem", "nextitem", "depth", "depth0", "cycle"}) {
    loop_fields.items.emplace_back(k, Value());
  }
  loop_fields.items[6].second = Value(n);
  loop_fields.items[9].second = Value(depth);
  loop_fields.items[10].second = Value(depth - 1);
  loop_fields.items[11].second =
      Value::function("cycle", [index0](Interpreter&, CallArgs& args) -> Value {
        if (args.positional.empty()) type_error("no items for cycling given");
        return args.positional[static_cast<size_t>(*index0) % args.positional.size()];
      });
  Value loop = Value::ns(std::move(loop_fields));
  auto& f = loop.mutable_entries().items;

  for (int64_t i = 0; i < n; ++i) {
    *index0 = i;
    f[0].second = Value(i + 1);
    f[1].second = Value(i);
    f[2].second = Value(n - i);
    f[3].second = Value(n - i - 1);
    f[4].second = Value(i == 0);
    f[5].second = Value(i == n - 1);
    f[7].second =
        i > 0 ? items[static_cast<size_t>(i - 1)] : Value::undefined("there is no previous item");
    f[8].second =
        i + 1 < n ? items[static_cast<size_t>(i + 1)] : Value::undefined("there is no next item");
    push_scope();
    Flow flow;
    try {
      assign("loop", loop);
      assign_target(node.target, items[static_cast<size_t>(i)], node);
      flow = exec_body(node.body);
    } catch (...) {
      pop_scope();
      throw;
    }
    pop_scope();
    if (flow == Flow::kBreak) break;
  }
  return Flow::kNormal;
}

void Interpreter::assign_target(const AssignTarget& target, const Value& value, const Node& at) {
  if (!target.is_tuple && target.names.size() == 1) {
    assign(target.names[0], value);
    return;
  }
  if (!value.is_sequence() && !value.is_string() && !value.is_mapping()) {
    throw TemplateError(ErrorClass::kType,
                        "cannot unpack non-iterable " + value.type_name() + " object", at.line,
                        at.column);
  }
  ValueList parts = iterate(value);
  if (parts.size() != target.names.size()) {
    std::string msg =
        parts.size() > target.names.size()
            ? "too many values to unpack (expected " + std::to_string(target.names.size()) + ")"
            : "not enough values to unpack (expected " + std::to_string(target.names.size()) +
                  ", got " + std::to_string(parts.size()) + ")";
    throw TemplateError(ErrorClass::kValue, msg, at.line, at.column);
  }
  for (size_t i = 0; i < parts.size(); ++i) assign(target.names[i], parts[i]);
}

void Interpreter::exec_set(const Node& node) {
  Value value;
  if (node.kind == NodeKind::kSet) {
    value = eval(*node.a);
  } else {
    value = Value(capture(node.body));
    if (node.c) value = apply_filter_chain(*node.c, std::move(value));
  }
  const AssignTarget& t = node.target;
  if (!t.attr.empty()) {
    const Value* ns = lookup(t.names[0]);
    if (!ns || ns->kind() != Kind::kNamespace) {
      throw TemplateError(ErrorClass::kRuntime, "cannot assign attribute on non-namespace object",
                          node.line, node.column);
    }
    if (!t.attr.empty() && t.attr[0] == '_') {
      throw TemplateError(ErrorClass::kSecurity,
                          "Chat templates cannot store underscore-prefixed attributes on a "
                          "namespace, but got '" +
                              t.attr + "'. Please rename the attribute.",
                          node.line, node.column);
    }
    const_cast<Value*>(ns)->mutable_entries().set(t.attr, std::move(value));
    return;
  }
  assign_target(t, value, node);
}

Value Interpreter::make_macro(const Node& node) {
  const Node* macro = &node;
  return Value::function(node.name, [macro](Interpreter& in, CallArgs& args) {
    if (++in.depth_ > kMaxDepth) {
      --in.depth_;
      throw TemplateError(ErrorClass::kRuntime, "maximum recursion depth exceeded");
    }
    in.push_scope();
    try {
      size_t np = macro->strs.size();
      ValueList varargs;
      for (size_t i = 0; i < args.positional.size(); ++i) {
        if (i < np) {
          in.assign(macro->strs[i], args.positional[i]);
        } else {
          varargs.push_back(args.positional[i]);
        }
      }
      ValueDict extra;
      for (auto& [k, v] : args.keyword) {
        bool is_param = false;
        for (const std::string& p : macro->strs) is_param |= p == k;
        if (is_param) {
          in.assign(k, v);
        } else if (k != "caller") {
          extra.set(k, v);
        }
      }
      for (size_t i = 0; i < np; ++i) {
        if (in.scopes_.back().find(macro->strs[i])) continue;
        in.assign(macro->strs[i], macro->list[i] ? in.eval(*macro->list[i])
                                                 : Value::undefined("parameter '" + macro->strs[i] +
                                                                    "' was not provided"));
      }
      in.assign("varargs", Value::tuple(std::move(varargs)));
      in.assign("kwargs", Value::dict(std::move(extra)));
      if (const Value* c = args.kwarg("caller")) in.assign("caller", *c);
      std::string s = in.capture(macro->body);
      in.pop_scope();
      --in.depth_;
      return Value(std::move(s));
    } catch (...) {
      in.pop_scope();
      --in.depth_;
      throw;
    }
  });
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
