// Helpers shared by the safetensors tests: reading the Python-written fixture's expectations.
#pragma once

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/half.h"
#include "core/tensor.h"
#include "io/json.h"

namespace sft::test {

// A JSON value of all_dtypes.json ("nan", "inf", "-inf", "-0.0" are strings) as a double.
inline double json_number(const Json& v) {
  if (v.is_boolean()) return v.get<bool>() ? 1.0 : 0.0;
  if (!v.is_string()) return v.get<double>();
  const std::string s = v.get<std::string>();
  if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
  if (s == "inf") return INFINITY;
  if (s == "-inf") return -INFINITY;
  if (s == "-0.0") return -0.0;
  ADD_FAILURE() << "unexpected special value " << s;
  return 0;
}

inline std::string to_hex(std::span<const std::byte> bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (std::byte b : bytes) {
    out += digits[std::to_integer<int>(b) >> 4];
    out += digits[std::to_integer<int>(b) & 15];
  }
  return out;
}

inline std::vector<std::byte> from_hex(const std::string& hex) {
  std::vector<std::byte> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<std::byte>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

inline Json load_all_dtypes_expectation(const std::string& path) {
  return read_json_file(path, "test");
}

}  // namespace sft::test
