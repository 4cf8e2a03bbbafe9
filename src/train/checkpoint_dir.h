// Checkpoint folders in output_dir: written atomically, found, and rotated.
//
// A checkpoint is written into a hidden temporary folder, completed by a marker file
// (sft_checkpoint.json), fsynced, and renamed to checkpoint-<step>. So a folder named
// checkpoint-<step> is complete by construction; a run killed mid-save leaves only a
// temporary folder, which the next save removes. Rotation (save_total_limit) deletes the
// oldest complete checkpoints and never the newest.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace sft {

inline constexpr const char* kCheckpointMarker = "sft_checkpoint.json";

struct CheckpointInfo {
  int64_t step = 0;
  std::string path;
};

// Writes checkpoint-<step> in `output_dir`: `write_files(folder)` fills a temporary folder,
// then the marker is added and the folder renamed into place (replacing an older
// checkpoint of the same step). On any error nothing but the temporary folder is touched,
// and it is removed. Returns the final path.
std::string save_checkpoint(const std::string& output_dir, int64_t step,
                            const std::function<void(const std::string& folder)>& write_files);

// Complete checkpoints (with their marker), oldest first.
std::vector<CheckpointInfo> list_checkpoints(const std::string& output_dir);
std::optional<CheckpointInfo> latest_checkpoint(const std::string& output_dir);

// Deletes the oldest checkpoints so that at most `limit` remain (limit >= 1); returns the removed
// paths.
std::vector<std::string> rotate_checkpoints(const std::string& output_dir, int64_t limit);

// Why `path`, given to --resume_from_checkpoint, is not an sft checkpoint, and what sft can do
// with it: a transformers / TRL checkpoint (trainer_state.json, optimizer.pt, ...: its torch
// optimizer and RNG states cannot be restored, but its weights can start a new run as
// --model_name_or_path), a model folder (the same), a missing folder, or something else. The hint
// names one command that works: with a non-empty `output_dir` (the run's) also a new one.
std::string explain_not_a_checkpoint(const std::string& path, const std::string& output_dir = "");
// A transformers / TRL Trainer checkpoint that sft continues (train/trainer.h: weights and
// position from it, fresh Adam moments): trainer_state.json beside the torch files, its model as
// safetensors with config.json, and tokenizer.json; no sft marker. A PEFT adapter checkpoint
// or one without a tokenizer is not (explain_not_a_checkpoint says what to do).
bool is_continuable_trl_checkpoint(const std::string& path);
// The notice a run continuing one prints first: what is taken from it and what is not.
std::string trl_continue_notice(const std::string& path);

// For --resume_from_checkpoint true without an sft checkpoint in output_dir: the sentence
// above about its newest transformers / TRL checkpoint-<step>, or "" when it has none.
std::string explain_foreign_checkpoints(const std::string& output_dir);
// The whole message for --resume_from_checkpoint true when output_dir holds no complete sft
// checkpoint. Its hint is a command that works next: "drop the flag" only where a run without it
// is accepted (output_dir missing or empty); otherwise --overwrite_output_dir true, naming the
// half-written checkpoint folders a killed save left (they hold nothing to resume).
std::string explain_no_checkpoint(const std::string& output_dir);

// The temporary folders interrupted saves left in output_dir (names, sorted).
std::vector<std::string> interrupted_saves(const std::string& output_dir);

// Removes temporary folders left by interrupted saves; returns how many.
int remove_interrupted_saves(const std::string& output_dir);

}  // namespace sft
