// Reading tokenizer.json components: typed field access that turns every shape problem into
// "[tokenizer] <file>: <place>: <problem> (hint: ...)", so a malformed file never crashes us.
#pragma once

#include <string>
#include <string_view>

#include "core/error.h"
#include "io/json.h"

namespace sft::text {

struct LoadContext {
  std::string file;  // the tokenizer.json path, for messages

  [[noreturn]] void fail(const std::string& place, std::string_view problem,
                         std::string_view hint =
                             "check the file against HF tokenizers' "
                             "serialization") const {
    fail_in_file("tokenizer", {file, place.empty() ? "top level" : place}, problem, hint);
  }

  const Json& field(const Json& obj, const std::string& place, const char* key) const;
  // Missing or null → `fallback`.
  std::string string_or(const Json& obj, const std::string& place, const char* key,
                        std::string_view fallback) const;
  bool bool_or(const Json& obj, const std::string& place, const char* key, bool fallback) const;
  int64_t int_or(const Json& obj, const std::string& place, const char* key,
                 int64_t fallback) const;
  std::string string(const Json& obj, const std::string& place, const char* key) const;
  // The "type" of a component object.
  std::string type(const Json& obj, const std::string& place) const;
};

}  // namespace sft::text
