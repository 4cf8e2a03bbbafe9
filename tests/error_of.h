// The message of the sft::Error a call throws, for tests of refusals:
//   EXPECT_NE(test::error_of([&] { parse(bad); }).find("line 3"), std::string::npos);
// "(no error)" when it returns, so a find() of the expected text fails visibly.
#pragma once

#include <functional>
#include <string>

#include "core/error.h"

namespace sft::test {

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace sft::test
