// Helpers for the data tests: write a small dataset file, catch an error's message.
#pragma once

#include <fstream>
#include <functional>
#include <string>

#include "core/error.h"
#include "test_paths.h"

namespace sft::data::test_util {

inline std::string write_file(const std::string& test_name, const std::string& file,
                              const std::string& content) {
  std::string path = sft::test::fresh_output_dir(test_name) + "/" + file;
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

// The message of the sft::Error `fn` throws, or "" when it throws nothing.
inline std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace sft::data::test_util
