// Where tests find their inputs and may write outputs.
//
// ../shared/assets (real tokenizers next to the checkout) is always there in CI, so a test
// that needs it must not pass quietly without it: require_shared_asset() fails the calling
// test when the asset is missing, and skips it instead only when SFT_ALLOW_MISSING_ASSETS=1
// (a fresh clone without ../shared). The rule lives here and nowhere else.
#pragma once

#include <optional>
#include <string>

namespace sft::test {

// A path inside the source tree, e.g. source_path("tests/fixtures/models").
std::string source_path(const std::string& relative);
// A fresh, empty folder under the build tree for one test's outputs.
std::string fresh_output_dir(const std::string& name);
// ../shared/assets/<relative>, e.g. require_shared_asset("tokenizers/qwen3"). When it is
// missing, records a failure in the running test (or a skip, with SFT_ALLOW_MISSING_ASSETS=1)
// and returns nullopt; the caller then returns:
//   const auto dir = test::require_shared_asset("tokenizers/qwen3");
//   if (!dir) return;
std::optional<std::string> require_shared_asset(const std::string& relative);

}  // namespace sft::test
