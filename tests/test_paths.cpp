#include "test_paths.h"

#include <filesystem>

namespace sft::test {

namespace fs = std::filesystem;

std::string source_path(const std::string& relative) {
  return (fs::path(SFT_SOURCE_DIR) / relative).string();
}

std::string fresh_output_dir(const std::string& name) {
  fs::path dir = fs::path(SFT_TEST_OUTPUT_DIR) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

std::optional<std::string> shared_assets_dir() {
  fs::path dir = fs::path(SFT_SOURCE_DIR).parent_path() / "shared" / "assets";
  if (fs::is_directory(dir)) return dir.string();
  return std::nullopt;
}

}  // namespace sft::test
