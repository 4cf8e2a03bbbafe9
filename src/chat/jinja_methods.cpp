// Python methods on str, dict and list that the immutable sandbox lets templates call.
// Methods that would mutate a list or dict (append, pop, update, ...) exist, as they do
// in Python, but calling them raises SecurityError, as ImmutableSandboxedEnvironment does.
#include <cstdio>

#include "chat/jinja_interpreter.h"
#include "chat/jinja_strings.h"

namespace sft::jinja {

namespace {

constexpr std::string_view kStrMethods[] = {
    "strip",      "lstrip",       "rstrip",       "split",    "rsplit",   "splitlines",
    "startswith", "endswith",     "upper",        "lower",    "title",    "capitalize",
    "replace",    "find",         "rfind",        "index",    "count",    "format",
    "join",       "isdigit",      "isalpha",      "isalnum",  "isspace",  "isupper",
    "islower",    "zfill",        "center",       "ljust",    "rjust",    "partition",
    "rpartition", "removeprefix", "removesuffix", "swapcase", "casefold", "isnumeric",
    "isdecimal",  "istitle",      "expandtabs"};
constexpr std::string_view kDictMethods[] = {"items", "keys", "values", "get", "copy"};
constexpr std::string_view kDictUnsafe[] = {"clear", "pop", "popitem", "setdefault", "update"};
constexpr std::string_view kListMethods[] = {"index", "count", "copy"};
constexpr std::string_view kListUnsafe[] = {"append", "extend",  "insert", "pop",
                                            "remove", "reverse", "sort",   "clear"};

template <size_t N>
bool in(const std::string_view (&names)[N], std::string_view name) {
  for (std::string_view n : names) {
    if (n == name) return true;
  }
  return false;
}

const Value* arg(const CallArgs& args, size_t idx, std::string_view name) {
  if (idx < args.positional.size()) return &args.positional[idx];
  return args.kwarg(name);
}

std::optional<std::string> opt_str(const Value* v) {
  if (!v || v->is_none()) return std::nullopt;
  if (!v->is_string()) type_error("must be str or None, not " + v->type_name());
  return v->str();
}

Value str_list(std::vector<std::string> parts) {
  ValueList out;
  out.reserve(parts.size());
  for (std::string& p : parts) out.emplace_back(std::move(p));
  return Value::list(std::move(out));
}

bool affix_match(const std::string& s, const Value& what, bool prefix) {
  auto one = [&](const Value& p) {
    if (!p.is_string()) type_error("startswith first arg must be str or a tuple of str");
    const std::string& x = p.str();
    if (x.size() > s.size()) return false;
    return prefix ? s.compare(0, x.size(), x) == 0
                  : s.compare(s.size() - x.size(), x.size(), x) == 0;
  };
  if (what.is_sequence()) {
    for (const Value& p : what.items()) {
      if (one(p)) return true;
    }
    return false;
  }
  return one(what);
}

// str.format with positional/keyword fields and !r / !s conversions (format specs ignored
// except for a plain width-free spec, which chat templates do not use).
Value str_format(const std::string& fmt, const CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    char c = fmt[i];
    if (c == '{') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
        out += '{';
        ++i;
        continue;
      }
      size_t close = fmt.find('}', i);
      if (close == std::string::npos)
        throw TemplateError(ErrorClass::kValue, "Single '{' encountered in format string");
      std::string field = fmt.substr(i + 1, close - i - 1);
      char conv = 's';
      size_t bang = field.find('!');
      size_t colon = field.find(':');
      std::string name = field.substr(0, std::min(bang, colon));
      if (bang != std::string::npos && bang + 1 < field.size()) conv = field[bang + 1];
      const Value* v = nullptr;
      if (name.empty()) {
        if (auto_index >= args.positional.size())
          throw TemplateError(ErrorClass::kIndex, "Replacement index " +
                                                      std::to_string(auto_index) +
                                                      " out of range for positional args tuple");
        v = &args.positional[auto_index++];
      } else if (std::isdigit(static_cast<unsigned char>(name[0]))) {
        size_t k = std::stoul(name);
        if (k >= args.positional.size())
          throw TemplateError(ErrorClass::kIndex, "Replacement index " + name +
                                                      " out of range for positional args tuple");
        v = &args.positional[k];
      } else {
        v = args.kwarg(name);
        if (!v) throw TemplateError(ErrorClass::kIndex, "'" + name + "'");
      }
      out += conv == 'r' ? v->repr() : v->to_str();
      i = close;
    } else if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') ++i;
      out += '}';
    } else {
      out += c;
    }
  }
  return Value(out);
}

// printf-style "fmt % args": %s %r %d %i %f %% with optional width/precision.
Value str_percent(const std::string& fmt, const CallArgs& args) {
  std::string out;
  size_t k = 0;
  auto next_arg = [&]() -> const Value& {
    if (k >= args.positional.size()) type_error("not enough arguments for format string");
    return args.positional[k++];
  };
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out += fmt[i];
      continue;
    }
    size_t j = i + 1;
    std::string spec = "%";
    while (j < fmt.size() &&
           std::string_view("-+ #0123456789.").find(fmt[j]) != std::string_view::npos)
      spec += fmt[j++];
    if (j >= fmt.size()) throw TemplateError(ErrorClass::kValue, "incomplete format");
    char conv = fmt[j];
    char buf[512];
    if (conv == '%') {
      out += '%';
    } else if (conv == 's' || conv == 'r') {
      std::string s = conv == 's' ? next_arg().to_str() : next_arg().repr();
      std::snprintf(buf, sizeof buf, (spec + "s").c_str(), s.c_str());
      out += spec == "%" ? s : std::string(buf);
    } else if (conv == 'd' || conv == 'i') {
      const Value& v = next_arg();
      if (!v.is_number()) type_error("%d format: a real number is required, not " + v.type_name());
      std::snprintf(
          buf, sizeof buf, (spec + "lld").c_str(),
          static_cast<long long>(v.is_float() ? static_cast<int64_t>(v.as_float()) : v.as_int()));
      out += buf;
    } else if (conv == 'f' || conv == 'e' || conv == 'g') {
      const Value& v = next_arg();
      if (!v.is_number()) type_error("must be real number, not " + v.type_name());
      std::snprintf(buf, sizeof buf, (spec + conv).c_str(), v.as_float());
      out += buf;
    } else {
      throw TemplateError(ErrorClass::kValue,
                          std::string("unsupported format character '") + conv + "'");
    }
    i = j;
  }
  if (k < args.positional.size())
    type_error("not all arguments converted during string formatting");
  return Value(out);
}

template <typename Pred>
bool all_chars(const std::string& s, Pred pred) {
  if (s.empty()) return false;
  for (uint32_t cp : pystr::code_points(s)) {
    if (!pred(cp)) return false;
  }
  return true;
}

Value call_str_method(const Value& self, const std::string& name, CallArgs& args) {
  const std::string& s = self.str();
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    pystr::Side side = name == "strip"    ? pystr::Side::kBoth
                       : name == "lstrip" ? pystr::Side::kLeft
                                          : pystr::Side::kRight;
    return Value(pystr::strip(s, opt_str(arg(args, 0, "chars")), side));
  }
  if (name == "split" || name == "rsplit") {
    std::optional<std::string> sep = opt_str(arg(args, 0, "sep"));
    if (sep && sep->empty()) throw TemplateError(ErrorClass::kValue, "empty separator");
    const Value* m = arg(args, 1, "maxsplit");
    int64_t maxsplit = m ? m->as_int() : -1;
    return str_list(name == "split" ? pystr::split(s, sep, maxsplit)
                                    : pystr::rsplit(s, sep, maxsplit));
  }
  if (name == "splitlines") {
    const Value* k = arg(args, 0, "keepends");
    return str_list(pystr::splitlines(s, k && k->truthy()));
  }
  if (name == "startswith" || name == "endswith") {
    if (args.positional.empty()) type_error(name + "() takes at least 1 argument (0 given)");
    return Value(affix_match(s, args.positional[0], name == "startswith"));
  }
  if (name == "upper") return Value(pystr::upper(s));
  if (name == "lower" || name == "casefold") return Value(pystr::lower(s));
  if (name == "title") return Value(pystr::title(s));
  if (name == "capitalize") return Value(pystr::capitalize(s));
  if (name == "replace") {
    if (args.positional.size() < 2) type_error("replace expected at least 2 arguments");
    const Value& a = args.positional[0];
    const Value& b = args.positional[1];
    if (!a.is_string() || !b.is_string())
      type_error("replace() argument 1 must be str, not " + (a.is_string() ? b : a).type_name());
    const Value* c = arg(args, 2, "count");
    return Value(pystr::replace(s, a.str(), b.str(), c ? c->as_int() : -1));
  }
  if (name == "find" || name == "rfind" || name == "index") {
    if (args.positional.empty() || !args.positional[0].is_string()) type_error("must be str");
    int64_t r = pystr::find(s, args.positional[0].str(), name == "rfind");
    if (name == "index" && r < 0) throw TemplateError(ErrorClass::kValue, "substring not found");
    return Value(r);
  }
  if (name == "count") {
    if (args.positional.empty() || !args.positional[0].is_string()) type_error("must be str");
    return Value(pystr::count(s, args.positional[0].str()));
  }
  if (name == "format") return str_format(s, args);
  if (name == "__mod__") return str_percent(s, args);
  if (name == "join") {
    if (args.positional.empty()) type_error("join() takes exactly one argument (0 given)");
    std::string out;
    bool first = true;
    for (const Value& v : iterate(args.positional[0])) {
      if (!v.is_string())
        type_error("sequence item: expected str instance, " + v.type_name() + " found");
      if (!first) out += s;
      first = false;
      out += v.str();
    }
    return Value(out);
  }
  if (name == "isdigit" || name == "isnumeric" || name == "isdecimal")
    return Value(all_chars(s, [](uint32_t c) { return c >= '0' && c <= '9'; }));
  if (name == "isalpha")
    return Value(
        all_chars(s, [](uint32_t c) { return c >= 0x80 || std::isalpha(static_cast<int>(c)); }));
  if (name == "isalnum")
    return Value(
        all_chars(s, [](uint32_t c) { return c >= 0x80 || std::isalnum(static_cast<int>(c)); }));
  if (name == "isspace") return Value(all_chars(s, [](uint32_t c) { return pystr::is_space(c); }));
  if (name == "isupper") return Value(pystr::upper(s) == s && pystr::lower(s) != s);
  if (name == "islower") return Value(pystr::lower(s) == s && pystr::upper(s) != s);
  if (name == "removeprefix" || name == "removesuffix") {
    if (args.positional.empty() || !args.positional[0].is_string()) type_error("must be str");
    const std::string& a = args.positional[0].str();
    if (name == "removeprefix")
      return Value(s.compare(0, a.size(), a) == 0 ? s.substr(a.size()) : s);
    if (a.size() <= s.size() && s.compare(s.size() - a.size(), a.size(), a) == 0)
      return Value(s.substr(0, s.size() - a.size()));
    return self;
  }
  if (name == "zfill" || name == "ljust" || name == "rjust" || name == "center") {
    const Value* w = arg(args, 0, "width");
    int64_t width = w ? w->as_int() : 0;
    int64_t len = python_len(self);
    if (len >= width) return self;
    size_t pad = static_cast<size_t>(width - len);
    std::string fill = args.positional.size() > 1 ? args.positional[1].to_str() : " ";
    auto rep = [&](size_t n) {
      std::string r;
      for (size_t i = 0; i < n; ++i) r += fill;
      return r;
    };
    if (name == "zfill") return Value(std::string(pad, '0') + s);
    if (name == "ljust") return Value(s + rep(pad));
    if (name == "rjust") return Value(rep(pad) + s);
    size_t left = pad / 2 + (pad & static_cast<size_t>(width) & 1);
    return Value(rep(left) + s + rep(pad - left));
  }
  if (name == "partition" || name == "rpartition") {
    if (args.positional.empty() || !args.positional[0].is_string()) type_error("must be str");
    const std::string& sep = args.positional[0].str();
    size_t hit = name == "partition" ? s.find(sep) : s.rfind(sep);
    if (hit == std::string::npos) {
      return name == "partition" ? Value::tuple({self, Value(""), Value("")})
                                 : Value::tuple({Value(""), Value(""), self});
    }
    return Value::tuple({Value(s.substr(0, hit)), Value(sep), Value(s.substr(hit + sep.size()))});
  }
  throw TemplateError(ErrorClass::kRuntime, "str." + name + "() is not supported by sft");
}

}  // namespace

bool has_method(const Value& obj, std::string_view name) {
  switch (obj.kind()) {
    case Kind::kString:
      return in(kStrMethods, name);
    case Kind::kDict:
      return in(kDictMethods, name) || in(kDictUnsafe, name);
    case Kind::kList:
      return in(kListMethods, name) || in(kListUnsafe, name);
    case Kind::kTuple:
      return name == "index" || name == "count";
    default:
      return false;
  }
}

Value call_method(Interpreter&, const Value& obj, const std::string& name, CallArgs& args) {
  if (obj.is_string()) return call_str_method(obj, name, args);
  if ((obj.is_mapping() && in(kDictUnsafe, name)) ||
      (obj.kind() == Kind::kList && in(kListUnsafe, name))) {
    throw TemplateError(ErrorClass::kSecurity, "access to attribute '" + name + "' of '" +
                                                   obj.type_name() + "' object is unsafe.");
  }
  if (obj.is_mapping()) {
    const ValueDict& d = obj.entries();
    if (name == "items") {
      ValueList out;
      for (const auto& [k, v] : d.items) out.push_back(Value::tuple({Value(k), v}));
      return Value::list(std::move(out));
    }
    if (name == "keys") {
      ValueList out;
      for (const auto& [k, v] : d.items) out.emplace_back(k);
      return Value::list(std::move(out));
    }
    if (name == "values") {
      ValueList out;
      for (const auto& [k, v] : d.items) out.push_back(v);
      return Value::list(std::move(out));
    }
    if (name == "get") {
      if (args.positional.empty()) type_error("get expected at least 1 argument, got 0");
      const Value& key = args.positional[0];
      if (key.is_string()) {
        if (const Value* v = d.find(key.str())) return *v;
      }
      return args.positional.size() > 1 ? args.positional[1] : Value::none();
    }
    if (name == "copy") return Value::dict(d);
  }
  if (obj.is_sequence()) {
    const ValueList& items = obj.items();
    if (name == "copy") return Value::list(items);
    if (args.positional.empty()) type_error(name + "() takes exactly one argument (0 given)");
    int64_t count = 0;
    for (size_t i = 0; i < items.size(); ++i) {
      if (values_equal(items[i], args.positional[0])) {
        if (name == "index") return Value(static_cast<int64_t>(i));
        ++count;
      }
    }
    if (name == "index") throw TemplateError(ErrorClass::kValue, "value is not in list");
    return Value(count);
  }
  type_error("'" + obj.type_name() + "' object has no attribute '" + name + "'");
}

}  // namespace sft::jinja
