#include "test_paths.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string_view>

namespace sft::test {

namespace fs = std::filesystem;

namespace {

bool missing_assets_allowed() {
  const char* v = std::getenv("SFT_ALLOW_MISSING_ASSETS");
  return v != nullptr && std::string_view(v) != "" && std::string_view(v) != "0";
}

// GTEST_SKIP returns from the function it is in, so it needs one returning void.
void skip_or_fail(const std::string& path) {
  if (missing_assets_allowed()) {
    GTEST_SKIP() << path << " is missing; skipped because SFT_ALLOW_MISSING_ASSETS is set";
  }
  ADD_FAILURE() << path
                << " is missing: this test needs the shared assets next to the checkout (hint: "
                   "set SFT_ALLOW_MISSING_ASSETS=1 to skip such tests on a clone without them)";
}

}  // namespace

std::string source_path(const std::string& relative) {
  return (fs::path(SFT_SOURCE_DIR) / relative).string();
}

std::string fresh_output_dir(const std::string& name) {
  fs::path dir = fs::path(SFT_TEST_OUTPUT_DIR) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

std::optional<std::string> require_shared_asset(const std::string& relative) {
  const fs::path path = fs::path(SFT_SOURCE_DIR).parent_path() / "shared" / "assets" / relative;
  if (fs::exists(path)) return path.string();
  skip_or_fail(path.string());
  return std::nullopt;
}

}  // namespace sft::test
