#include "io/json.h"

#include <set>
#include <vector>

#include "core/utf8.h"
#include "io/mapped_file.h"

namespace sft {

namespace {

// nlohmann's messages start with "[json.exception.parse_error.101] "; users need only the rest.
std::string strip_nlohmann_prefix(const std::string& what) {
  size_t close = what.find("] ");
  return (what.rfind("[json.exception", 0) == 0 && close != std::string::npos)
             ? what.substr(close + 2)
             : what;
}

template <class J>
J parse_strict(std::string_view text, std::string_view component, const std::string& source) {
  if (auto bad = find_invalid_utf8(text)) {
    std::string place = "byte " + std::to_string(*bad);
    throw JsonError(component,
                    describe_file_problem({source, place}, "invalid UTF-8",
                                          "JSON must be UTF-8 encoded; re-save the file as UTF-8"),
                    JsonError::Kind::kInvalidUtf8, place);
  }
  // One set of seen keys per open object; the key path names where a duplicate sits.
  std::vector<std::set<std::string>> seen_keys;
  std::vector<std::string> key_path;
  std::string duplicate;
  auto on_event = [&](int /*depth*/, typename J::parse_event_t event, J& parsed) {
    switch (event) {
      case J::parse_event_t::object_start:
        seen_keys.emplace_back();
        key_path.emplace_back();
        break;
      case J::parse_event_t::object_end:
        seen_keys.pop_back();
        key_path.pop_back();
        break;
      case J::parse_event_t::key: {
        const std::string& key = parsed.template get_ref<const std::string&>();
        key_path.back() = key;
        if (!seen_keys.back().insert(key).second && duplicate.empty()) {
          for (size_t i = 0; i + 1 < key_path.size(); ++i) duplicate += key_path[i] + ".";
          duplicate += key;
        }
        break;
      }
      default:
        break;
    }
    return true;
  };
  J value;
  try {
    value = J::parse(text.begin(), text.end(), on_event);
  } catch (const typename J::exception& e) {
    std::string detail = strip_nlohmann_prefix(e.what());
    throw JsonError(
        component,
        describe_file_problem({source, ""}, "invalid JSON: " + detail,
                              "check the file with a JSON validator (e.g. python -m json.tool)"),
        JsonError::Kind::kSyntax, detail);
  }
  if (!duplicate.empty()) {
    throw JsonError(
        component,
        describe_file_problem({source, "key '" + duplicate + "'"}, "duplicate key",
                              "each key may appear once per object; remove the repeated one"),
        JsonError::Kind::kDuplicateKey, duplicate);
  }
  return value;
}

template <class J>
std::string type_name(const J& value) {
  switch (value.type()) {
    case J::value_t::object:
      return "object";
    case J::value_t::array:
      return "array";
    case J::value_t::string:
      return "string";
    case J::value_t::boolean:
      return "boolean";
    case J::value_t::null:
      return "null";
    case J::value_t::number_integer:
    case J::value_t::number_unsigned:
    case J::value_t::number_float:
      return "number";
    default:
      return "value";
  }
}

}  // namespace

Json parse_json_strict(std::string_view text, std::string_view component,
                       const std::string& source) {
  return parse_strict<Json>(text, component, source);
}

OrderedJson parse_ordered_json_strict(std::string_view text, std::string_view component,
                                      const std::string& source) {
  return parse_strict<OrderedJson>(text, component, source);
}

Json read_json_file(const std::string& path, std::string_view component) {
  return parse_json_strict(read_text_file(path, component), component, path);
}

std::string json_type_name(const Json& value) {
  return type_name(value);
}

std::string json_type_name(const OrderedJson& value) {
  return type_name(value);
}

}  // namespace sft
