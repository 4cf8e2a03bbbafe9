// The values a Jinja template computes with: Python's types as jinja2 sees them.
//
// A Value is one of Undefined, None, bool, int, float, str, list, tuple, dict, namespace
// or callable. Containers and strings are shared and copy-on-nothing: copying a Value is
// a refcount bump, so passing messages around the interpreter costs no string copies.
// Lists and dicts are mutable only through the interpreter (namespace attributes, the
// results of filters); templates cannot mutate them (the immutable sandbox).
//
// Printing follows Python: str() for {{ }}, repr() inside containers ("['a', 1, True]"),
// floats as Python's shortest round-trip repr. JSON conversion follows json.dumps.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/json.h"

namespace sft::jinja {

// Chat inputs keep key order (tojson output depends on it), so they are ordered_json.
using OrderedJson = nlohmann::ordered_json;

class Value;
class Interpreter;

using ValueList = std::vector<Value>;

// Insertion-ordered dict with string keys (what JSON and chat templates produce).
struct ValueDict {
  std::vector<std::pair<std::string, Value>> items;
  const Value* find(std::string_view key) const;
  Value* find(std::string_view key);
  void set(std::string key, Value value);
};

// Positional and keyword arguments of a call.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
  const Value* kwarg(std::string_view name) const;
};

using NativeFunction = std::function<Value(Interpreter&, CallArgs&)>;

struct Callable {
  std::string name;
  NativeFunction fn;
};

enum class Kind : uint8_t {
  kUndefined,
  kNone,
  kBool,
  kInt,
  kFloat,
  kString,
  kList,
  kTuple,
  kDict,
  kNamespace,
  kCallable,
};

class Value {
 public:
  Value() = default;  // Undefined
  static Value undefined(std::string hint);
  static Value none();
  Value(bool b) : kind_(Kind::kBool), i_(b) {}
  Value(int i) : kind_(Kind::kInt), i_(i) {}
  Value(int64_t i) : kind_(Kind::kInt), i_(i) {}
  Value(double f) : kind_(Kind::kFloat), f_(f) {}
  Value(std::string s);
  Value(const char* s) : Value(std::string(s)) {}
  Value(std::shared_ptr<const std::string> s)
      : kind_(Kind::kString), ptr_(std::const_pointer_cast<std::string>(std::move(s))) {}
  static Value list(ValueList items);
  static Value tuple(ValueList items);
  static Value dict(ValueDict d);
  static Value ns(ValueDict d);
  static Value function(std::string name, NativeFunction fn);
  static Value from_json(const OrderedJson& j);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat || is_bool(); }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_sequence() const { return kind_ == Kind::kList || kind_ == Kind::kTuple; }
  bool is_mapping() const { return kind_ == Kind::kDict; }
  bool is_callable() const { return kind_ == Kind::kCallable; }

  bool as_bool() const { return i_ != 0; }
  int64_t as_int() const { return i_; }  // also bool
  double as_float() const { return kind_ == Kind::kFloat ? f_ : static_cast<double>(i_); }
  const std::string& str() const { return *static_cast<const std::string*>(ptr_.get()); }
  const ValueList& items() const { return *static_cast<const ValueList*>(ptr_.get()); }
  ValueList& mutable_items() { return *static_cast<ValueList*>(ptr_.get()); }
  const ValueDict& entries() const { return *static_cast<const ValueDict*>(ptr_.get()); }
  ValueDict& mutable_entries() { return *static_cast<ValueDict*>(ptr_.get()); }
  const Callable& callable() const { return *static_cast<const Callable*>(ptr_.get()); }
  // For Undefined: what was missing ("'dict object' has no attribute 'x'").
  const std::string& undefined_hint() const;

  bool truthy() const;
  // Python type name, as in "'dict object' has no attribute".
  std::string type_name() const;
  // str(value) and repr(value) as Python prints them.
  std::string to_str() const;
  std::string repr() const;
  void append_str(std::string& out) const;

  // json.dumps; throws a TypeError-class message for values JSON cannot hold.
  OrderedJson to_json() const;

  bool same_object(const Value& other) const;

 private:
  Kind kind_ = Kind::kUndefined;
  union {
    int64_t i_ = 0;
    double f_;
  };
  // One payload (keeps a Value at 24 bytes): std::string for strings and Undefined's hint,
  // ValueList for list/tuple, ValueDict for dict/namespace, Callable for functions.
  std::shared_ptr<void> ptr_;
};

// Python ==, < for the values templates compare. `less` throws (via the callback's
// caller) for unorderable pairs: it returns false and sets *ok = false.
bool values_equal(const Value& a, const Value& b);
bool values_less(const Value& a, const Value& b, bool* ok);

// Python float repr: shortest round trip, "1.0", "1e-05", "1e+20", "inf", "nan".
std::string python_float_repr(double v);
// Python repr of a str: quotes chosen as Python does, escapes for controls.
std::string python_string_repr(std::string_view s);

// json.dumps(value, ensure_ascii=False, indent, separators, sort_keys) byte-for-byte.
struct JsonDumpOptions {
  int indent = -1;  // -1: None (one line)
  std::string item_sep;
  std::string key_sep;
  bool sort_keys = false;
  bool ensure_ascii = false;
};
std::string python_json_dumps(const Value& value, const JsonDumpOptions& options);

}  // namespace sft::jinja
