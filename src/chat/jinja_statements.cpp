// The interpreter's statements: exec dispatches on a node's kind to one exec_* per statement
// kind (if, for, set, macro, call block, filter block, with, generation); scopes are
// Interpreter::Scope guards, so every way out of a body, exceptions included, pops them.
#include <memory>

#include "chat/jinja_interpreter.h"

namespace sft::jinja {

namespace {

constexpr int kMaxDepth = 200;  // macro recursion; Python would hit its own limit

// Counts one macro call in `depth` while it runs; refuses to start past kMaxDepth.
class DepthGuard {
 public:
  explicit DepthGuard(int& depth) : depth_(depth) {
    if (++depth_ > kMaxDepth) {
      --depth_;
      throw TemplateError(ErrorClass::kRuntime, "maximum recursion depth exceeded");
    }
  }
  ~DepthGuard() { --depth_; }
  DepthGuard(const DepthGuard&) = delete;
  DepthGuard& operator=(const DepthGuard&) = delete;

 private:
  int& depth_;
};

// The fields of jinja2's `loop` object, in the order they are listed (their slots in it).
enum LoopField : size_t {
  kIndex,
  kIndex0,
  kRevindex,
  kRevindex0,
  kFirst,
  kLast,
  kLength,
  kPrevitem,
  kNextitem,
  kDepth,
  kDepth0,
  kCycle,
  kLoopFieldCount,
};

// One loop object per loop, updated in place per iteration (Python's LoopContext is one
// object too); `index0` is shared with loop.cycle.
Value make_loop_object(int64_t n, const std::shared_ptr<int64_t>& index0) {
  const int64_t depth = 1;  // only recursive loops nest depth in jinja2
  ValueDict fields;
  for (const char* k : {"index", "index0", "revindex", "revindex0", "first", "last", "length",
                        "previtem", "nextitem", "depth", "depth0", "cycle"}) {
    fields.items.emplace_back(k, Value());
  }
  fields.items[kLength].second = Value(n);
  fields.items[kDepth].second = Value(depth);
  fields.items[kDepth0].second = Value(depth - 1);
  fields.items[kCycle].second =
      Value::function("cycle", [index0](Interpreter&, CallArgs& args) -> Value {
        if (args.positional.empty()) type_error("no items for cycling given");
        return args.positional[static_cast<size_t>(*index0) % args.positional.size()];
      });
  return Value::ns(std::move(fields));
}

// The per-iteration fields of the loop object for item i of `items`.
void update_loop_object(Value& loop, const ValueList& items, int64_t i) {
  auto& f = loop.mutable_entries().items;
  const int64_t n = static_cast<int64_t>(items.size());
  f[kIndex].second = Value(i + 1);
  f[kIndex0].second = Value(i);
  f[kRevindex].second = Value(n - i);
  f[kRevindex0].second = Value(n - i - 1);
  f[kFirst].second = Value(i == 0);
  f[kLast].second = Value(i == n - 1);
  f[kPrevitem].second =
      i > 0 ? items[static_cast<size_t>(i - 1)] : Value::undefined("there is no previous item");
  f[kNextitem].second =
      i + 1 < n ? items[static_cast<size_t>(i + 1)] : Value::undefined("there is no next item");
}

}  // namespace

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
      return exec_if(node);
    case NodeKind::kFor:
      return exec_for(node);
    case NodeKind::kSet:
    case NodeKind::kSetBlock:
      exec_set(node);
      return Flow::kNormal;
    case NodeKind::kMacro:
      assign(node.name, make_macro(node));
      return Flow::kNormal;
    case NodeKind::kCallBlock:
      exec_call_block(node);
      return Flow::kNormal;
    case NodeKind::kFilterBlock:
      exec_filter_block(node);
      return Flow::kNormal;
    case NodeKind::kWith:
      return exec_with(node);
    case NodeKind::kBreak:
      return Flow::kBreak;
    case NodeKind::kContinue:
      return Flow::kContinue;
    case NodeKind::kGeneration:
      exec_generation(node);
      return Flow::kNormal;
    default:
      throw TemplateError(ErrorClass::kRuntime, "unexpected node", node.line, node.column);
  }
}

// `if` opens no scope in jinja2: a set inside it is visible after it.
Interpreter::Flow Interpreter::exec_if(const Node& node) {
  for (size_t i = 0; i < node.list.size(); ++i) {
    if (eval(*node.list[i]).truthy()) return exec_body(node.bodies[i]);
  }
  return exec_body(node.else_body);
}

// The items a for-loop walks, after its `if` filter: the iterable's own list when it is one
// and unfiltered (`iterable` keeps it alive, no copy), else built into `owned`.
const ValueList& Interpreter::for_items(const Node& node, const Value& iterable, ValueList& owned) {
  if (iterable.is_none() || iterable.is_number() || iterable.is_callable()) {
    throw TemplateError(ErrorClass::kType, "'" + iterable.type_name() + "' object is not iterable",
                        node.a->line, node.a->column);
  }
  if (!iterable.is_sequence()) owned = iterate(iterable);
  const ValueList& all = iterable.is_sequence() ? iterable.items() : owned;
  if (!node.b) return all;
  ValueList kept;
  for (const Value& item : all) {
    Scope scope(*this);  // the filter sees the loop variables, and only for this item
    assign_target(node.target, item, node);
    if (eval(*node.b).truthy()) kept.push_back(item);
  }
  owned = std::move(kept);
  return owned;
}

Interpreter::Flow Interpreter::exec_for(const Node& node) {
  const Value iterable = eval(*node.a);
  ValueList owned;
  const ValueList& items = for_items(node, iterable, owned);
  if (items.empty()) return exec_body(node.else_body);

  const int64_t n = static_cast<int64_t>(items.size());
  auto index0 = std::make_shared<int64_t>(0);
  Value loop = make_loop_object(n, index0);
  for (int64_t i = 0; i < n; ++i) {
    *index0 = i;
    update_loop_object(loop, items, i);
    Scope scope(*this);  // each iteration's sets stay in the iteration
    assign("loop", loop);
    assign_target(node.target, items[static_cast<size_t>(i)], node);
    if (exec_body(node.body) == Flow::kBreak) break;
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

// Parameters from positional then keyword arguments, the rest into varargs / kwargs, missing
// ones from their defaults (evaluated in the call's scope) or Undefined; `caller` if passed.
void Interpreter::bind_macro_arguments(const Node& macro, CallArgs& args) {
  const size_t np = macro.strs.size();
  ValueList varargs;
  for (size_t i = 0; i < args.positional.size(); ++i) {
    if (i < np) {
      assign(macro.strs[i], args.positional[i]);
    } else {
      varargs.push_back(args.positional[i]);
    }
  }
  ValueDict extra;
  for (auto& [k, v] : args.keyword) {
    bool is_param = false;
    for (const std::string& p : macro.strs) is_param |= p == k;
    if (is_param) {
      assign(k, v);
    } else if (k != "caller") {
      extra.set(k, v);
    }
  }
  for (size_t i = 0; i < np; ++i) {
    if (scopes_.back().find(macro.strs[i])) continue;
    assign(macro.strs[i],
           macro.list[i] ? eval(*macro.list[i])
                         : Value::undefined("parameter '" + macro.strs[i] + "' was not provided"));
  }
  assign("varargs", Value::tuple(std::move(varargs)));
  assign("kwargs", Value::dict(std::move(extra)));
  if (const Value* c = args.kwarg("caller")) assign("caller", *c);
}

Value Interpreter::make_macro(const Node& node) {
  const Node* macro = &node;
  return Value::function(node.name, [macro](Interpreter& in, CallArgs& args) {
    DepthGuard depth(in.depth_);
    Scope scope(in);
    in.bind_macro_arguments(*macro, args);
    return Value(in.capture(macro->body));
  });
}

// caller()'s parameters: positional, then keyword, then the default (or Undefined).
void Interpreter::bind_caller_arguments(const Node& block, CallArgs& args) {
  for (size_t i = 0; i < block.strs.size(); ++i) {
    Value v;
    if (i < args.positional.size()) {
      v = args.positional[i];
    } else if (const Value* kw = args.kwarg(block.strs[i])) {
      v = *kw;
    } else if (block.list[i]) {
      v = eval(*block.list[i]);
    }
    assign(block.strs[i], v);
  }
}

// {% call m(...) %}body{% endcall %}: m is called with `caller` bound to a function that
// renders body; what m returns is output.
void Interpreter::exec_call_block(const Node& node) {
  const Node* block = &node;
  Value caller = Value::function("caller", [block](Interpreter& in, CallArgs& args) {
    Scope scope(in);
    in.bind_caller_arguments(*block, args);
    return Value(in.capture(block->body));
  });
  Value result;
  {
    Scope scope(*this);
    assign("caller", caller);
    result = eval(*node.a);
  }
  result.append_str(*out_);
}

void Interpreter::exec_filter_block(const Node& node) {
  Value text(capture(node.body));
  apply_filter_chain(*node.c, std::move(text)).append_str(*out_);
}

// The values are evaluated in the outer scope, then bound in a new one for the body.
Interpreter::Flow Interpreter::exec_with(const Node& node) {
  std::vector<Value> values;
  for (const NodePtr& v : node.list) values.push_back(eval(*v));
  Scope scope(*this);
  for (size_t i = 0; i < node.strs.size(); ++i) assign(node.strs[i], values[i]);
  return exec_body(node.body);
}

// transformers renders the body first (caller()), then records where it lands.
void Interpreter::exec_generation(const Node& node) {
  std::string text = capture(node.body);
  size_t begin = out_->size();
  out_->append(text);
  spans_.push_back({begin, out_->size()});
}

}  // namespace sft::jinja
