// The files/ folder of a W&B offline run (train/wandb_run.h), as the wandb SDK fills it beside
// the transaction log, so the run folder reads the same before and after `wandb sync`:
//
//   config.yaml          the run config, one `key: {value: ...}` entry per key (W&B's format),
//                        written when the run starts
//   wandb-metadata.json  where and how the run ran: os, program, host, executable, root,
//                        startedAt, cpu_count_logical, memory.total
//   output.log           the console lines, as they are printed
//   wandb-summary.json   the run summary (each key's last value, _runtime, _step, _timestamp,
//                        _wandb.runtime), written when the run finishes
//
// requirements.txt, a Python run's package list, has no C++ counterpart and is not written.
// wandb sync uploads from the transaction log; these files are what a person (or `wandb sync`
// for the run page's Files tab) finds there.
#pragma once

#include <cstdint>
#include <string>

#include "io/json.h"
#include "train/wandb_records.h"

namespace sft {

// config.yaml: `_wandb: {value: {}}` first, then each key of `config` in order, its value in
// YAML flow style (floats always with a decimal point: 2.0e-05, so YAML 1.1 readers such as
// PyYAML read a float, not a string).
std::string wandb_config_yaml(const Json& config);

// wandb-metadata.json's object.
Json wandb_metadata(const WandbEnvironment& env);

// "2026-12-02T14:02:37.123456Z": W&B's startedAt.
std::string wandb_iso_time(double unix_s);

}  // namespace sft
