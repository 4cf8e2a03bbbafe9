// jinja2's built-in filters as chat templates use them, plus transformers' tojson
// (json.dumps with ensure_ascii=False, indent, separators, sort_keys).
// kFilters, at the end, is the one list of names: has_filter (the parser's check) and
// apply_filter (the interpreter's call) both read it, so a filter is added in one place.
#include <algorithm>
#include <cmath>
#include <map>

#include "chat/jinja_interpreter.h"
#include "chat/jinja_parser.h"
#include "chat/jinja_strings.h"
#include "core/html_escape.h"

namespace sft::jinja {

namespace {

// Argument `idx` positionally or by keyword `name`; null when absent.
const Value* arg(const CallArgs& args, size_t idx, std::string_view name) {
  if (idx < args.positional.size()) return &args.positional[idx];
  return args.kwarg(name);
}

bool arg_bool(const CallArgs& args, size_t idx, std::string_view name, bool def) {
  const Value* v = arg(args, idx, name);
  return v ? v->truthy() : def;
}

std::string as_text(const Value& v) {
  return v.to_str();
}

Value sort_key(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value(pystr::lower(v.str()));
  return v;
}

// Attribute lookup for attribute= arguments ("a.b" and "0" path segments allowed).
Value attribute_of(Interpreter& in, const Value& item, const std::string& path) {
  Value cur = item;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string part =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit);
    cur = numeric ? in.get_item(cur, Value(static_cast<int64_t>(std::stoll(part))))
                  : in.get_item(cur, Value(part));
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

void sort_values(ValueList& items, bool reverse, std::function<Value(const Value&)> key) {
  std::vector<std::pair<Value, Value>> keyed;
  for (Value& v : items) keyed.emplace_back(key(v), v);
  bool bad = false;
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
    bool ok;
    bool r = reverse ? values_less(b.first, a.first, &ok) : values_less(a.first, b.first, &ok);
    if (!ok) bad = true;
    return r;
  });
  if (bad) type_error("'<' not supported between these values");
  for (size_t i = 0; i < items.size(); ++i) items[i] = keyed[i].second;
}

Value select_like(Interpreter& in, const Value& seq, CallArgs& args, bool attr_mode, bool keep) {
  ValueList out;
  size_t next = 0;
  std::string attribute;
  if (attr_mode) {
    if (args.positional.empty()) type_error("Missing parameter for attribute name");
    attribute = args.positional[0].to_str();
    next = 1;
  }
  std::string test;
  CallArgs test_args;
  if (next < args.positional.size()) {
    test = args.positional[next].to_str();
    test_args.positional.assign(args.positional.begin() + static_cast<long>(next) + 1,
                                args.positional.end());
    test_args.keyword = args.keyword;
    if (!has_test(test)) throw TemplateError(ErrorClass::kSyntax, "No test named '" + test + "'.");
  }
  for (const Value& item : iterate(seq)) {
    Value v = attr_mode ? attribute_of(in, item, attribute) : item;
    bool r = test.empty() ? v.truthy() : apply_test(in, test, v, test_args);
    if (r == keep) out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value select_filter(Interpreter& in, const Value& v, CallArgs& args) {
  return select_like(in, v, args, false, true);
}
Value reject_filter(Interpreter& in, const Value& v, CallArgs& args) {
  return select_like(in, v, args, false, false);
}
Value selectattr_filter(Interpreter& in, const Value& v, CallArgs& args) {
  return select_like(in, v, args, true, true);
}
Value rejectattr_filter(Interpreter& in, const Value& v, CallArgs& args) {
  return select_like(in, v, args, true, false);
}

Value map_filter(Interpreter& in, const Value& seq, CallArgs& args) {
  ValueList out;
  if (const Value* attr = args.kwarg("attribute")) {
    const Value* def = args.kwarg("default");
    for (const Value& item : iterate(seq)) {
      Value v = attribute_of(in, item, attr->to_str());
      out.push_back(v.is_undefined() && def ? *def : v);
    }
    return Value::list(std::move(out));
  }
  if (args.positional.empty()) return Value::list(iterate(seq));
  std::string name = args.positional[0].to_str();
  if (!has_filter(name))
    throw TemplateError(ErrorClass::kSyntax, "No filter named '" + name + "'.");
  CallArgs rest;
  rest.positional.assign(args.positional.begin() + 1, args.positional.end());
  rest.keyword = args.keyword;
  for (const Value& item : iterate(seq)) {
    CallArgs a = rest;
    out.push_back(apply_filter(in, name, item, a));
  }
  return Value::list(std::move(out));
}

Value tojson_filter(Interpreter&, const Value& v, CallArgs& args) {
  JsonDumpOptions o;
  const Value* ensure_ascii = arg(args, 0, "ensure_ascii");
  const Value* indent = arg(args, 1, "indent");
  const Value* separators = arg(args, 2, "separators");
  o.ensure_ascii = ensure_ascii && ensure_ascii->truthy();
  o.sort_keys = arg_bool(args, 3, "sort_keys", false);
  if (indent && !indent->is_none()) {
    if (indent->is_string()) type_error("indent as a string is not supported");
    o.indent = static_cast<int>(indent->as_int());
  }
  o.item_sep = o.indent >= 0 ? "," : ", ";
  o.key_sep = ": ";
  if (separators && !separators->is_none()) {
    if (!separators->is_sequence() || separators->items().size() != 2)
      throw TemplateError(ErrorClass::kValue, "separators must be a (item, key) pair");
    o.item_sep = separators->items()[0].to_str();
    o.key_sep = separators->items()[1].to_str();
  }
  return Value(python_json_dumps(v, o));
}

Value round_filter(Interpreter&, const Value& v, CallArgs& args) {
  const Value* p = arg(args, 0, "precision");
  const Value* m = arg(args, 1, "method");
  int64_t precision = p ? p->as_int() : 0;
  std::string method = m ? m->to_str() : "common";
  double x = v.as_float();
  double scale = std::pow(10.0, static_cast<double>(precision));
  double r;
  if (method == "common") {
    r = std::nearbyint(x * scale) / scale;  // Python's round(): ties to even
  } else if (method == "ceil") {
    r = std::ceil(x * scale) / scale;
  } else if (method == "floor") {
    r = std::floor(x * scale) / scale;
  } else {
    throw TemplateError(ErrorClass::kRuntime, "method must be common, ceil or floor");
  }
  return Value(r);
}

Value int_filter(Interpreter&, const Value& v, CallArgs& args) {
  const Value* d = arg(args, 0, "default");
  Value def = d ? *d : Value(static_cast<int64_t>(0));
  if (v.is_int() || v.is_bool()) return Value(v.as_int());
  if (v.is_float()) return Value(static_cast<int64_t>(v.as_float()));
  if (v.is_string()) {
    std::string s = pystr::strip(v.str(), std::nullopt, pystr::Side::kBoth);
    char* end = nullptr;
    long long i = std::strtoll(s.c_str(), &end, 10);
    if (!s.empty() && end && *end == '\0') return Value(static_cast<int64_t>(i));
    double f = std::strtod(s.c_str(), &end);
    if (!s.empty() && end && *end == '\0' && std::isfinite(f))
      return Value(static_cast<int64_t>(f));
  }
  return def;
}

Value float_filter(Interpreter&, const Value& v, CallArgs& args) {
  const Value* d = arg(args, 0, "default");
  Value def = d ? *d : Value(0.0);
  if (v.is_number()) return Value(v.as_float());
  if (v.is_string()) {
    std::string s = pystr::strip(v.str(), std::nullopt, pystr::Side::kBoth);
    char* end = nullptr;
    double f = std::strtod(s.c_str(), &end);
    if (!s.empty() && end && *end == '\0') return Value(f);
  }
  return def;
}

Value min_max(const Value& v, const CallArgs& args, bool want_max, Interpreter& in) {
  bool cs = arg_bool(args, 0, "case_sensitive", false);
  const Value* attr = arg(args, 1, "attribute");
  ValueList items = iterate(v);
  if (items.empty())
    return Value::undefined(std::string("No aggregated item, sequence was empty."));
  auto key = [&](const Value& x) {
    return sort_key(attr ? attribute_of(in, x, attr->to_str()) : x, cs);
  };
  size_t best = 0;
  for (size_t i = 1; i < items.size(); ++i) {
    bool ok;
    bool better = want_max ? values_less(key(items[best]), key(items[i]), &ok)
                           : values_less(key(items[i]), key(items[best]), &ok);
    if (!ok) type_error("'<' not supported between these values");
    if (better) best = i;
  }
  return items[best];
}

Value indent_filter(Interpreter&, const Value& v, CallArgs& args) {
  const Value* w = arg(args, 0, "width");
  bool first = arg_bool(args, 1, "first", false);
  bool blank = arg_bool(args, 2, "blank", false);
  std::string pad =
      w ? (w->is_string() ? w->str() : std::string(static_cast<size_t>(w->as_int()), ' '))
        : std::string(4, ' ');
  std::string s = v.to_str() + "\n";  // jinja2's quirk so splitlines keeps a last blank line
  std::vector<std::string> lines = pystr::splitlines(s, false);
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += "\n";
    if (i > 0 && (blank || !lines[i].empty())) out += pad;
    out += lines[i];
  }
  if (first) out = pad + out;
  return Value(out);
}

// Each filter as one function of (interpreter, operand, arguments), listed in kFilters below.

Value trim_filter(Interpreter&, const Value& v, CallArgs& args) {
  const Value* chars = arg(args, 0, "chars");
  std::optional<std::string> set;
  if (chars && !chars->is_none()) set = chars->to_str();
  return Value(pystr::strip(as_text(v), set, pystr::Side::kBoth));
}

Value title_filter(Interpreter&, const Value& v, CallArgs&) {
  // jinja2 title-cases words split at whitespace, '-', and opening brackets.
  std::string s = as_text(v), out;
  bool start = true;
  for (uint32_t cp : pystr::code_points(s)) {
    bool sep = pystr::is_space(cp) || cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<';
    std::string one;
    pystr::append_utf8(one, cp);
    out += sep ? one : (start ? pystr::upper(one) : pystr::lower(one));
    start = sep;
  }
  return Value(out);
}

Value replace_filter(Interpreter&, const Value& v, CallArgs& args) {
  if (args.positional.size() < 2) type_error("replace() missing required arguments");
  const Value* c = arg(args, 2, "count");
  return Value(pystr::replace(as_text(v), as_text(args.positional[0]), as_text(args.positional[1]),
                              c && !c->is_none() ? c->as_int() : -1));
}

Value join_filter(Interpreter& in, const Value& v, CallArgs& args) {
  const Value* d = arg(args, 0, "d");
  const Value* attr = arg(args, 1, "attribute");
  std::string sep = d ? as_text(*d) : "";
  std::string out;
  bool first = true;
  for (const Value& item : iterate(v)) {
    if (!first) out += sep;
    first = false;
    (attr ? attribute_of(in, item, attr->to_str()) : item).append_str(out);
  }
  return Value(out);
}

Value first_or_last(const Value& v, bool first) {
  ValueList items = iterate(v);
  if (items.empty())
    return Value::undefined(std::string("No ") + (first ? "first" : "last") +
                            " item, sequence was empty.");
  return first ? items.front() : items.back();
}

Value default_filter(Interpreter&, const Value& v, CallArgs& args) {
  const Value* def = arg(args, 0, "default_value");
  bool boolean = arg_bool(args, 1, "boolean", false);
  if (v.is_undefined() || (boolean && !v.truthy())) return def ? *def : Value(std::string());
  return v;
}

Value items_filter(Interpreter&, const Value& v, CallArgs&) {
  if (v.is_undefined()) return Value::list({});
  if (!v.is_mapping()) type_error("Can only get item pairs from a mapping.");
  ValueList out;
  for (const auto& [k, x] : v.entries().items) out.push_back(Value::tuple({Value(k), x}));
  return Value::list(std::move(out));
}

Value escape_filter(Interpreter&, const Value& v, CallArgs&) {
  return Value(html_escape(as_text(v)));
}

Value abs_filter(Interpreter&, const Value& v, CallArgs&) {
  if (!v.is_number()) type_error("bad operand type for abs(): '" + v.type_name() + "'");
  return v.is_float() ? Value(std::fabs(v.as_float()))
                      : Value(static_cast<int64_t>(std::llabs(v.as_int())));
}

Value unique_filter(Interpreter& in, const Value& v, CallArgs& args) {
  bool cs = arg_bool(args, 0, "case_sensitive", false);
  const Value* attr = arg(args, 1, "attribute");
  ValueList out, seen;
  for (const Value& item : iterate(v)) {
    Value key = sort_key(attr ? attribute_of(in, item, attr->to_str()) : item, cs);
    bool dup = false;
    for (const Value& s : seen) dup = dup || values_equal(s, key);
    if (dup) continue;
    seen.push_back(key);
    out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value reverse_filter(Interpreter&, const Value& v, CallArgs&) {
  if (v.is_string()) {
    std::vector<std::string_view> chars = utf8_chars(v.str());
    std::string out;
    for (auto it = chars.rbegin(); it != chars.rend(); ++it) out += *it;
    return Value(out);
  }
  ValueList items = iterate(v);
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

Value sort_filter(Interpreter& in, const Value& v, CallArgs& args) {
  bool reverse = arg_bool(args, 0, "reverse", false);
  bool cs = arg_bool(args, 1, "case_sensitive", false);
  const Value* attr = arg(args, 2, "attribute");
  ValueList items = iterate(v);
  sort_values(items, reverse, [&](const Value& x) {
    return sort_key(attr ? attribute_of(in, x, attr->to_str()) : x, cs);
  });
  return Value::list(std::move(items));
}

Value dictsort_filter(Interpreter&, const Value& v, CallArgs& args) {
  bool cs = arg_bool(args, 0, "case_sensitive", false);
  const Value* by = arg(args, 1, "by");
  bool reverse = arg_bool(args, 2, "reverse", false);
  if (!v.is_mapping()) type_error("You can only sort by either \"key\" or \"value\"");
  bool by_value = by && by->to_str() == "value";
  ValueList items;
  for (const auto& [k, x] : v.entries().items) items.push_back(Value::tuple({Value(k), x}));
  sort_values(items, reverse,
              [&](const Value& t) { return sort_key(t.items()[by_value ? 1 : 0], cs); });
  return Value::list(std::move(items));
}

Value sum_filter(Interpreter& in, const Value& v, CallArgs& args) {
  const Value* attr = arg(args, 0, "attribute");
  const Value* start = arg(args, 1, "start");
  Value total = start ? *start : Value(static_cast<int64_t>(0));
  for (const Value& item : iterate(v)) {
    Value x = attr ? attribute_of(in, item, attr->to_str()) : item;
    if (!x.is_number() || !total.is_number())
      type_error("unsupported operand type(s) for +: '" + total.type_name() + "' and '" +
                 x.type_name() + "'");
    total = (total.is_float() || x.is_float()) ? Value(total.as_float() + x.as_float())
                                               : Value(total.as_int() + x.as_int());
  }
  return total;
}

Value wordcount_filter(Interpreter&, const Value& v, CallArgs&) {
  int64_t n = 0;
  bool in_word = false;
  for (uint32_t cp : pystr::code_points(as_text(v))) {
    bool w =
        cp == '_' || (cp < 0x80 ? std::isalnum(static_cast<int>(cp)) != 0 : !pystr::is_space(cp));
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Value(n);
}

Value batch_filter(Interpreter&, const Value& v, CallArgs& args) {
  const Value* count = arg(args, 0, "linecount");
  const Value* fill = arg(args, 1, "fill_with");
  if (!count) type_error("batch() missing required argument 'linecount'");
  size_t k = static_cast<size_t>(std::max<int64_t>(1, count->as_int()));
  ValueList out, cur;
  for (const Value& item : iterate(v)) {
    cur.push_back(item);
    if (cur.size() == k) {
      out.push_back(Value::list(std::move(cur)));
      cur.clear();
    }
  }
  if (!cur.empty()) {
    if (fill && !fill->is_none()) {
      while (cur.size() < k) cur.push_back(*fill);
    }
    out.push_back(Value::list(std::move(cur)));
  }
  return Value::list(std::move(out));
}

Value attr_filter(Interpreter& in, const Value& v, CallArgs& args) {
  if (args.positional.empty()) type_error("attr() missing required argument 'name'");
  // Python getattr only: dict keys are not attributes here (unlike obj.name in a template).
  if (v.kind() != Kind::kNamespace && !has_method(v, args.positional[0].to_str()))
    return undefined_attr(v, args.positional[0].to_str());
  return in.get_attr(v, args.positional[0].to_str());
}

Value format_filter(Interpreter& in, const Value& v, CallArgs& args) {
  CallArgs fargs;
  fargs.positional = args.positional;
  return call_method(in, Value(as_text(v)), "__mod__", fargs);
}

Value center_filter(Interpreter&, const Value& v, CallArgs& args) {
  const Value* w = arg(args, 0, "width");
  std::string s = as_text(v);
  int64_t width = w ? w->as_int() : 80;
  int64_t len = python_len(Value(s));
  if (len >= width) return Value(s);
  int64_t total = width - len;
  int64_t left = total / 2 + (total & width & 1);
  return Value(std::string(static_cast<size_t>(left), ' ') + s +
               std::string(static_cast<size_t>(total - left), ' '));
}

using FilterFn = Value (*)(Interpreter& in, const Value& operand, CallArgs& args);

struct Filter {
  std::string_view name;
  FilterFn apply;  // null: a jinja2 filter sft does not implement
};

// Every filter name the engine knows. The parser accepts all of them (so `x is filter` and
// "No filter named" answer as jinja2 does); one without an implementation fails when applied.
constexpr Filter kFilters[] = {
    {"tojson", tojson_filter},
    {"trim", trim_filter},
    {"length", [](Interpreter&, const Value& v, CallArgs&) { return Value(python_len(v)); }},
    {"count", [](Interpreter&, const Value& v, CallArgs&) { return Value(python_len(v)); }},
    {"upper",
     [](Interpreter&, const Value& v, CallArgs&) { return Value(pystr::upper(as_text(v))); }},
    {"lower",
     [](Interpreter&, const Value& v, CallArgs&) { return Value(pystr::lower(as_text(v))); }},
    {"title", title_filter},
    {"capitalize",
     [](Interpreter&, const Value& v, CallArgs&) { return Value(pystr::capitalize(as_text(v))); }},
    {"replace", replace_filter},
    {"join", join_filter},
    {"first", [](Interpreter&, const Value& v, CallArgs&) { return first_or_last(v, true); }},
    {"last", [](Interpreter&, const Value& v, CallArgs&) { return first_or_last(v, false); }},
    {"list", [](Interpreter&, const Value& v, CallArgs&) { return Value::list(iterate(v)); }},
    {"select", select_filter},
    {"reject", reject_filter},
    {"selectattr", selectattr_filter},
    {"rejectattr", rejectattr_filter},
    {"map", map_filter},
    {"default", default_filter},
    {"d", default_filter},
    {"items", items_filter},
    {"string", [](Interpreter&, const Value& v, CallArgs&) { return Value(as_text(v)); }},
    {"int", int_filter},
    {"float", float_filter},
    {"abs", abs_filter},
    {"round", round_filter},
    {"unique", unique_filter},
    {"reverse", reverse_filter},
    {"sort", sort_filter},
    {"dictsort", dictsort_filter},
    {"min", [](Interpreter& in, const Value& v, CallArgs& a) { return min_max(v, a, false, in); }},
    {"max", [](Interpreter& in, const Value& v, CallArgs& a) { return min_max(v, a, true, in); }},
    {"sum", sum_filter},
    {"indent", indent_filter},
    {"wordcount", wordcount_filter},
    {"safe", [](Interpreter&, const Value& v, CallArgs&) { return Value(as_text(v)); }},
    {"e", escape_filter},
    {"escape", escape_filter},
    {"forceescape", escape_filter},
    {"batch", batch_filter},
    {"attr", attr_filter},
    {"format", format_filter},
    {"center", center_filter},
    {"pprint", [](Interpreter&, const Value& v, CallArgs&) { return Value(v.repr()); }},
    {"truncate", nullptr},
    {"striptags", nullptr},
    {"slice", nullptr},
    {"wordwrap", nullptr},
    {"urlencode", nullptr},
    {"filesizeformat", nullptr},
    {"xmlattr", nullptr},
    {"urlize", nullptr},
    {"groupby", nullptr},
    {"random", nullptr},
};

const Filter* find_filter(std::string_view name) {
  for (const Filter& f : kFilters) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

}  // namespace

bool has_filter(std::string_view name) {
  return find_filter(name) != nullptr;
}

Value apply_filter(Interpreter& in, const std::string& name, Value v, CallArgs& args) {
  const Filter* f = find_filter(name);
  if (f == nullptr || f->apply == nullptr)
    throw TemplateError(ErrorClass::kRuntime, "filter '" + name + "' is not supported by sft");
  return f->apply(in, v, args);
}

}  // namespace sft::jinja
