// `sft train`'s checks before any work: everything that can be known from the flags and the
// file system is checked before data preparation and model loading, so a typo or a read-only
// folder fails in a second, not after minutes of tokenizing.
//
//   output_dir   a folder or creatable; writable (a probe file is created and removed in it,
//                or in its nearest existing parent); empty unless --overwrite_output_dir or a
//                resume; an I/O error names the folder and the OS's cause
//   resume       --resume_from_checkpoint true needs a complete checkpoint in output_dir; a
//                path must be a complete checkpoint-<step> folder, or a transformers / TRL
//                checkpoint sft continues (checkpoint_dir.h, is_continuable_trl_checkpoint)
//   dataset      a name that looks like a path ("./", "../", "/", "~", or a data extension) and
//                does not exist is "file not found", never a Hub id; the train split's files
//                must be found (local folder, glob or HF cache)
//   model        the folder (or HF cache snapshot) with its config.json
//   schedule     --lr_scheduler_kwargs valid for --lr_scheduler_type
//
// A failed run that completed no checkpoint then leaves output_dir as it found it
// (restore_output_dir): what the run created is removed, so the next run does not find a
// "non-empty" folder holding only an empty metrics.jsonl.
#pragma once

#include <set>
#include <string>

#include "train/args.h"

namespace sft {

struct OutputDirBefore {
  std::string path;
  bool existed = false;
  std::set<std::string> entries;  // names in it before the run
};

// Throws sft::Error ("[train] ...", "[data] ...", "[model] ...") or UsageError; returns what
// output_dir held, for restore_output_dir.
OutputDirBefore preflight_train(const TrainingArgs& args);

// After a failed run: when output_dir holds no complete checkpoint, removes the entries the run
// created (the folder itself if the run created it). Returns how many entries were removed.
// Never throws.
int restore_output_dir(const OutputDirBefore& before);

// "./x", "../x", "/x", "~/x", or a name ending in a data extension (.jsonl, .json, .parquet,
// .csv, .txt, .arrow): meant as a local file, never a Hub id.
bool looks_like_local_path(const std::string& name);

}  // namespace sft
