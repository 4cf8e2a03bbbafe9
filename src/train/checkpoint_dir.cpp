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

// A transformers Trainer checkpoint (what TRL's SFTTrainer saves): trainer_state.json beside
// the torch-pickled optimizer / scheduler / RNG / training-args files.
bool is_transformers_checkpoint(const fs::path& dir) {
  if (!fs::is_regular_file(dir / "trainer_state.json")) return false;
  for (const char* f : {"optimizer.pt", "scheduler.pt", "rng_state.pth", "training_args.bin"})
    if (fs::exists(dir / f)) return true;
  return false;
}

bool is_model_folder(const fs::path& dir) {
  if (!fs::is_regular_file(dir / "config.json")) return false;
  for (const char* f : {"model.safetensors", "model.safetensors.index.json"})
    if (fs::exists(dir / f)) return true;
  return false;
}

// "at step 500 of 1000" from a transformers trainer_state.json, "" if it does not say.
std::string step_of_trainer_state(const fs::path& dir) {
  try {
    const Json state = read_json_file((dir / "trainer_state.json").string(), kComponent);
    std::string out = " at step " + std::to_string(state.at("global_step").get<int64_t>());
    if (state.contains("max_steps") && state["max_steps"].is_number_integer())
      out += " of " + std::to_string(state["max_steps"].get<int64_t>());
    return out;
  } catch (const std::exception&) {
    return "";
  }
}

// The one command that starts a new run from the folder's weights. A run that names the folder
// as the model and keeps a non-empty output_dir would be refused next ("not empty"), so the hint
// names a new output_dir then.
std::string use_as_model_hint(const fs::path& dir, const std::string& output_dir) {
  std::string hint =
      "to start a new run from its weights (a new optimizer and schedule, steps "
      "from 0), run the same command with --model_name_or_path " +
      dir.string() + " instead of --resume_from_checkpoint";
  std::error_code ec;
  if (!output_dir.empty() && fs::is_directory(output_dir, ec) && !fs::is_empty(output_dir, ec))
    hint += " and a new --output_dir (" + output_dir + " is not empty)";
  if (!fs::exists(dir / "tokenizer.json"))
    hint += "; it has no tokenizer.json: copy the base model's tokenizer files into it first";
  return hint;
}

}  // namespace

std::string explain_not_a_checkpoint(const std::string& path, const std::string& output_dir) {
  const fs::path dir(path);
  const std::string head = "--resume_from_checkpoint " + path + ": ";
  if (!fs::exists(dir))
    return head +
           "no such folder (hint: give a checkpoint-<step> folder of an sft run, or true "
           "for the latest in output_dir)";
  if (is_transformers_checkpoint(dir)) {
    std::string what = head + "a transformers / TRL Trainer checkpoint" +
                       step_of_trainer_state(dir) +
                       " (trainer_state.json, optimizer.pt, ...), not an sft one: its optimizer, "
                       "scheduler and RNG states are torch pickles (optimizer.pt, rng_state.pth) "
                       "that sft cannot restore, so the run cannot continue bit for bit";
    if (is_model_folder(dir) && !fs::exists(dir / "tokenizer.json"))
      what +=
          " (hint: copy the base model's tokenizer files (tokenizer.json, "
          "tokenizer_config.json) into it and the same command continues it, with its "
          "weights and position and fresh Adam moments; or " +
          use_as_model_hint(dir, output_dir) + "; or resume it with TRL)";
    else if (is_model_folder(dir))
      what += " (hint: " + use_as_model_hint(dir, output_dir) + "; or resume it with TRL)";
    else
      what += " (hint: resume it with TRL; it holds no safetensors weights sft could start from)";
    return what;
  }
  if (is_model_folder(dir))
    return head + "a model folder, not a training checkpoint (no " +
           std::string(kCheckpointMarker) + ") (hint: " + use_as_model_hint(dir, output_dir) + ")";
  return head + "not a complete sft checkpoint (no " + std::string(kCheckpointMarker) +
         "; hint: use a checkpoint-<step> folder, or true for the latest in output_dir)";
}

bool is_continuable_trl_checkpoint(const std::string& path) {
  const fs::path dir(path);
  std::error_code ec;
  return fs::is_directory(dir, ec) && !fs::exists(dir / kCheckpointMarker, ec) &&
         is_transformers_checkpoint(dir) && is_model_folder(dir) &&
         fs::is_regular_file(dir / "tokenizer.json", ec);
}

std::string trl_continue_notice(const std::string& path) {
  return "--resume_from_checkpoint " + path + " is a transformers / TRL Trainer checkpoint" +
         step_of_trainer_state(path) +
         ": continuing it with its weights (model.safetensors) and, from trainer_state.json, its "
         "step, epoch, data position and learning-rate schedule; its optimizer.pt (a torch "
         "pickle) is not read, so the Adam moments start from zero and the run does not continue "
         "bit for bit as TRL's would. Use the TRL run's dataset, --seed, "
         "--per_device_train_batch_size, --gradient_accumulation_steps and number of processes "
         "(checked against its epoch)";
}

std::string explain_foreign_checkpoints(const std::string& output_dir) {
  std::error_code ec;
  std::optional<std::pair<int64_t, fs::path>> newest;
  for (const auto& entry : fs::directory_iterator(output_dir, ec)) {
    const std::optional<int64_t> step = step_of(entry.path().filename().string());
    if (!step || !entry.is_directory() || !is_transformers_checkpoint(entry.path())) continue;
    if (!newest || *step > newest->first) newest = {{*step, entry.path()}};
  }
  if (!newest) return "";
  std::string out = "; its " + newest->second.filename().string() +
                    " is a transformers / TRL checkpoint, whose torch optimizer and RNG states "
                    "sft cannot restore";
  if (is_continuable_trl_checkpoint(newest->second.string()))
    out += " (hint: --resume_from_checkpoint " + newest->second.string() +
           " continues it, from its weights and position with fresh Adam moments; or " +
           use_as_model_hint(newest->second, output_dir) + ")";
  else if (is_model_folder(newest->second))
    out += " (hint: " + use_as_model_hint(newest->second, output_dir) + ")";
  return out;
}

std::string explain_no_checkpoint(const std::string& output_dir) {
  std::string out = "--resume_from_checkpoint true: no complete sft checkpoint in " + output_dir;
  const std::string foreign = explain_foreign_checkpoints(output_dir);
  if (!foreign.empty()) return out + foreign;
  const std::vector<std::string> partial = interrupted_saves(output_dir);
  if (!partial.empty()) {
    out += "; it holds only " +
           std::string(partial.size() == 1 ? "a" : std::to_string(partial.size())) +
           " half-written checkpoint" + (partial.size() == 1 ? " (" : "s (") + partial.front() +
           (partial.size() == 1 ? "" : ", ...") +
           ") from a run killed while saving, which cannot be resumed";
  }
  std::error_code ec;
  if (!fs::is_directory(output_dir, ec) || fs::is_empty(output_dir, ec))
    return out + " (hint: drop the flag to start afresh, or give a checkpoint-<step> folder)";
  return out + " (hint: start afresh in it: replace --resume_from_checkpoint true with " +
         "--overwrite_output_dir true" +
         (partial.empty() ? "" : ", whose first save removes the half-written folder") +
         "; or give a checkpoint-<step> folder)";
}

std::vector<std::string> interrupted_saves(const std::string& output_dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(output_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kTempPrefix, 0) == 0 && entry.is_directory(ec)) out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

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
