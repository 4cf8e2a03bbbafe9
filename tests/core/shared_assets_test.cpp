// The rule of tests/test_paths.h: a missing shared asset fails the test that needs it; only
// SFT_ALLOW_MISSING_ASSETS=1 turns that into a skip (the skip side is not asserted here, as a
// test that skips on purpose would read as a skipped check in every run).
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "test_paths.h"

namespace sft {

namespace {

// Clears SFT_ALLOW_MISSING_ASSETS for one test and puts back what the caller had.
class WithoutAllowance {
 public:
  WithoutAllowance() {
    if (const char* v = std::getenv(kName)) saved_ = v;
    unsetenv(kName);
  }
  ~WithoutAllowance() {
    if (saved_)
      setenv(kName, saved_->c_str(), 1);
    else
      unsetenv(kName);
  }

 private:
  static constexpr const char* kName = "SFT_ALLOW_MISSING_ASSETS";
  std::optional<std::string> saved_;
};

void require_missing() {
  EXPECT_FALSE(test::require_shared_asset("tokenizers/no-such-tokenizer").has_value());
}

}  // namespace

TEST(SharedAssets, MissingAssetFailsTheTest) {
  WithoutAllowance guard;
  EXPECT_NONFATAL_FAILURE(require_missing(), "SFT_ALLOW_MISSING_ASSETS=1");
  setenv("SFT_ALLOW_MISSING_ASSETS", "0", 1);  // "0" does not allow skipping either
  EXPECT_NONFATAL_FAILURE(require_missing(), "tokenizers/no-such-tokenizer is missing");
}

}  // namespace sft
