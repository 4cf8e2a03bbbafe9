#include "chat/jinja_template.h"

#include <ctime>

#include "chat/jinja_parser.h"

namespace sft::jinja {

namespace {

bool contains_generation(const NodeList& body) {
  for (const NodePtr& n : body) {
    if (n->kind == NodeKind::kGeneration) return true;
    if (contains_generation(n->body) || contains_generation(n->else_body)) return true;
    for (const NodeList& b : n->bodies) {
      if (contains_generation(b)) return true;
    }
  }
  return false;
}

Value make_namespace(Interpreter&, CallArgs& args) {
  ValueDict d;
  for (const Value& p : args.positional) {
    if (!p.is_mapping()) type_error("namespace() positional argument must be a mapping");
    for (const auto& [k, v] : p.entries().items) d.set(k, v);
  }
  for (const auto& [k, v] : args.keyword) d.set(k, v);
  for (const auto& [k, v] : d.items) {
    if (!k.empty() && k[0] == '_') {
      throw TemplateError(ErrorClass::kSecurity,
                          "Chat templates cannot store underscore-prefixed attributes on a "
                          "namespace, but got '" +
                              k + "'. Please rename the attribute.");
    }
  }
  return Value::ns(std::move(d));
}

Value make_range(Interpreter&, CallArgs& args) {
  int64_t start = 0, stop = 0, step = 1;
  auto get = [&](size_t i) {
    const Value& v = args.positional[i];
    if (!v.is_int() && !v.is_bool())
      type_error("'" + v.type_name() + "' object cannot be interpreted as an integer");
    return v.as_int();
  };
  if (args.positional.size() == 1) {
    stop = get(0);
  } else if (args.positional.size() >= 2) {
    start = get(0);
    stop = get(1);
    if (args.positional.size() >= 3) step = get(2);
  } else {
    type_error("range expected at least 1 argument, got 0");
  }
  if (step == 0) throw TemplateError(ErrorClass::kValue, "range() arg 3 must not be zero");
  ValueList out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    out.emplace_back(i);
    if (out.size() > 100000) throw TemplateError(ErrorClass::kRuntime, "range too big");
  }
  return Value::list(std::move(out));
}

}  // namespace

const ValueDict& template_globals() {
  static const ValueDict globals = [] {
    ValueDict g;
    g.set("raise_exception",
          Value::function("raise_exception", [](Interpreter&, CallArgs& args) -> Value {
            std::string msg = args.positional.empty() ? "" : args.positional[0].to_str();
            throw TemplateError(ErrorClass::kRaised, msg);
          }));
    g.set("strftime_now", Value::function("strftime_now", [](Interpreter&, CallArgs& args) {
            std::string fmt = args.positional.empty() ? "" : args.positional[0].to_str();
            std::time_t now = std::time(nullptr);
            std::tm tm{};
            localtime_r(&now, &tm);
            char buf[256];
            size_t n = std::strftime(buf, sizeof buf, fmt.c_str(), &tm);
            return Value(std::string(buf, n));
          }));
    g.set("namespace", Value::function("namespace", make_namespace));
    g.set("dict", Value::function("dict", [](Interpreter&, CallArgs& args) {
            ValueDict d;
            for (const Value& p : args.positional) {
              if (p.is_mapping()) {
                for (const auto& [k, v] : p.entries().items) d.set(k, v);
              }
            }
            for (const auto& [k, v] : args.keyword) d.set(k, v);
            return Value::dict(std::move(d));
          }));
    g.set("range", Value::function("range", make_range));
    return g;
  }();
  return globals;
}

Template::Template(std::string source) : source_(std::move(source)) {
  body_ = std::make_shared<const NodeList>(parse_template(source_));
  has_generation_ = contains_generation(*body_);
}

std::string Template::render(ValueDict context, std::vector<ByteSpan>* generation_spans) const {
  // Context variables shadow the globals, as in jinja2.
  Interpreter in(std::move(context), &template_globals());
  std::string out = in.render(*body_);
  if (generation_spans) {
    generation_spans->insert(generation_spans->end(), in.generation_spans().begin(),
                             in.generation_spans().end());
  }
  return out;
}

}  // namespace sft::jinja
