// Where tests find their inputs and may write outputs.
#pragma once

#include <optional>
#include <string>

namespace sft::test {

// A path inside the source tree, e.g. source_path("tests/fixtures/models").
std::string source_path(const std::string& relative);
// A fresh, empty folder under the build tree for one test's outputs.
std::string fresh_output_dir(const std::string& name);
// ../shared/assets when present (absent on a user's fresh clone: tests skip then).
std::optional<std::string> shared_assets_dir();

}  // namespace sft::test
