#include "train/checkpoint_dir.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

#include "core/error.h"
#include "core/log.h"
#include "io/atomic_file.h"
#include "io/json.h"

namespace sft {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kComponent = "checkpoint";
constexpr std::string_view kPrefix = "checkpoint-";
constexpr std::string_view kTempPrefix = ".checkpoint-";

void fsync_path(const fs::path& path, bool directory) {
  int fd = ::open(path.c_str(), (directory ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
  if (fd < 0)
    fail(kComponent, "cannot open " + path.string() + " to flush it: " + errno_text(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) fail(kComponent, "cannot flush " + path.string() + ": " + errno_text(err));
}

std::optional<int64_t> step_of(const std::string& name) {
  if (name.rfind(kPrefix, 0) != 0 || name.size() == kPrefix.size()) return std::nullopt;
  const std::string digits = name.substr(kPrefix.size());
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return std::stoll(digits);
}

}  // namespace

std::string save_checkpoint(const std::string& output_dir, int64_t step,
                            const std::function<void(const std::string& folder)>& write_files) {
  const fs::path dir(output_dir);
  const std::string name = std::string(kPrefix) + std::to_string(step);
  const fs::path final_path = dir / name;
  const fs::path temp = dir / (std::string(kTempPrefix) + std::to_string(step) + ".tmp-" +
                               std::to_string(::getpid()));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail(kComponent, "cannot create " + output_dir + ": " + ec.message());
  remove_interrupted_saves(output_dir);
  try {
    fs::create_directories(temp);
    write_files(temp.string());
    write_file_atomically(
        (temp / kCheckpointMarker).string(),
        Json{{"step", step}, {"format", "sft.cpp checkpoint"}, {"version", 1}}.dump(2) + "\n");
    for (const auto& entry : fs::recursive_directory_iterator(temp)) {
      if (entry.is_regular_file()) fsync_path(entry.path(), false);
    }
    fsync_path(temp, true);
    if (fs::exists(final_path)) {
      // Re-saving a step (after a resume): move the old one aside first, so a crash here
      // still leaves a complete checkpoint under one of the two names.
      const fs::path old = dir / (std::string(kTempPrefix) + std::to_string(step) + ".old-" +
                                  std::to_string(::getpid()));
      fs::rename(final_path, old);
      fs::rename(temp, final_path);
      fs::remove_all(old);
    } else {
      fs::rename(temp, final_path);
    }
    fsync_path(dir, true);
  } catch (const fs::filesystem_error& e) {
    fs::remove_all(temp, ec);
    fail(kComponent,
         "cannot save " + final_path.string() + ": " + e.code().message() +
             " (earlier checkpoints are untouched; hint: check free space and permissions)");
  } catch (...) {
    fs::remove_all(temp, ec);
    throw;
  }
  return final_path.string();
}

std::vector<CheckpointInfo> list_checkpoints(const std::string& output_dir) {
  std::vector<CheckpointInfo> out;
  std::error_code ec;
  if (!fs::is_directory(output_dir, ec)) return out;
  for (const auto& entry : fs::directory_iterator(output_dir)) {
    if (!entry.is_directory()) continue;
    const std::optional<int64_t> step = step_of(entry.path().filename().string());
    if (!step) continue;
    if (!fs::is_regular_file(entry.path() / kCheckpointMarker)) {
      log_warn("ignoring ", entry.path().string(), ": no ", kCheckpointMarker,
               " (not written by sft, or incomplete)");
      continue;
    }
    out.push_back({*step, entry.path().string()});
  }
  std::sort(out.begin(), out.end(),
            [](const CheckpointInfo& a, const CheckpointInfo& b) { return a.step < b.step; });
  return out;
}

std::optional<CheckpointInfo> latest_checkpoint(const std::string& output_dir) {
  std::vector<CheckpointInfo> all = list_checkpoints(output_dir);
  if (all.empty()) return std::nullopt;
  return all.back();
}

std::vector<std::string> rotate_checkpoints(const std::string& output_dir, int64_t limit) {
  if (limit < 1)
    fail(kComponent, "save_total_limit must be at least 1, got " + std::to_string(limit));
  std::vector<CheckpointInfo> all = list_checkpoints(output_dir);
  std::vector<std::string> removed;
  for (size_t i = 0; i + static_cast<size_t>(limit) < all.size(); ++i) {
    fs::remove_all(all[i].path);
    removed.push_back(all[i].path);
  }
  return removed;
}

int remove_interrupted_saves(const std::string& output_dir) {
  int removed = 0;
  std::error_code ec;
  if (!fs::is_directory(output_dir, ec)) return 0;
  for (const auto& entry : fs::directory_iterator(output_dir)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_directory() && name.rfind(kTempPrefix, 0) == 0) {
      log_warn("removing ", entry.path().string(), ", left by an interrupted checkpoint save");
      fs::remove_all(entry.path(), ec);
      ++removed;
    }
  }
  return removed;
}

}  // namespace sft
