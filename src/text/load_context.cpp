// See load_context.h.
#include "text/load_context.h"

namespace sft::text {

const Json& LoadContext::field(const Json& obj, const std::string& place, const char* key) const {
  if (!obj.is_object()) fail(place, "expected an object, got " + json_type_name(obj));
  auto it = obj.find(key);
  if (it == obj.end()) fail(place, std::string("missing field '") + key + "'");
  return *it;
}

std::string LoadContext::string_or(const Json& obj, const std::string& place, const char* key,
                                   std::string_view fallback) const {
  if (!obj.is_object()) fail(place, "expected an object, got " + json_type_name(obj));
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::string(fallback);
  if (!it->is_string()) fail(place + "." + key, "expected a string, got " + json_type_name(*it));
  return it->get<std::string>();
}

bool LoadContext::bool_or(const Json& obj, const std::string& place, const char* key,
                          bool fallback) const {
  if (!obj.is_object()) fail(place, "expected an object, got " + json_type_name(obj));
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) fail(place + "." + key, "expected a boolean, got " + json_type_name(*it));
  return it->get<bool>();
}

int64_t LoadContext::int_or(const Json& obj, const std::string& place, const char* key,
                            int64_t fallback) const {
  if (!obj.is_object()) fail(place, "expected an object, got " + json_type_name(obj));
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (!it->is_number_integer())
    fail(place + "." + key, "expected an integer, got " + json_type_name(*it));
  return it->get<int64_t>();
}

std::string LoadContext::string(const Json& obj, const std::string& place, const char* key) const {
  const Json& v = field(obj, place, key);
  if (!v.is_string()) fail(place + "." + key, "expected a string, got " + json_type_name(v));
  return v.get<std::string>();
}

std::string LoadContext::type(const Json& obj, const std::string& place) const {
  return string(obj, place, "type");
}

}  // namespace sft::text
