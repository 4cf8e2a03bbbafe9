// The W&B `Record` protocol buffers sft writes into a .wandb transaction log, encoded by hand
// (train/protobuf_writer.h) after wandb/proto/wandb_internal.proto of the wandb SDK (0.31):
//
//   Record       1 num, 2 history, 3 summary, 5 config, 11 telemetry, 12 metric,
//                13 output_raw, 17 run, 18 exit, 21 header, 26 environment, 200 _info
//   Header       1 version_info {1 producer, 2 min_consumer}
//   Run          1 run_id, 2 entity, 3 project, 4 config, 6 run_group, 7 job_type,
//                8 display_name, 9 notes, 10 tags, 13 host, 17 start_time, 19 telemetry
//   Config       1 update: ConfigItem {1 key, 16 value_json}
//   History      1 item: HistoryItem {2 nested_key, 16 value_json}, 2 step {1 num}
//   Summary      1 update: SummaryItem {1 key or 2 nested_key, 16 value_json}
//   Metric       1 name, 2 glob_name, 4 step_metric, 6 options {1 step_sync, 3 defined}
//   OutputRaw    1 output_type (STDERR 0, STDOUT 1), 2 timestamp, 3 line
//   Environment  1 os, 3 started_at, 6 program, 11 root, 12 host, 14 executable,
//                16 cpu_count, 17 cpu_count_logical, 21 memory {1 total}, 199 writer_id
//   Telemetry    3 feature {4 offline, 57 lib_cpp}, 13 platform
//   RunExit      1 exit_code, 2 runtime
//   _RecordInfo  1 stream_id;   Timestamp {1 seconds, 2 nanos}
//
// Record fields outside the record_type oneof (num, _info) come first, as Go marshals them.
// Items are written the way wandb-core writes them (history and summary keys as a one-element
// nested_key, config keys as key), so a record matches the SDK's byte for byte when its
// items come in the same order. Values are JSON text (wandb_value_json).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/json.h"

namespace sft {

struct WandbItem {
  std::string key;
  std::string value_json;
};

// A value as W&B's JSON: numbers in their shortest round-trip form, non-finite floats as
// NaN / Infinity / -Infinity (what the SDK writes and wandb-core reads), strings and
// objects as JSON.
std::string wandb_value_json(const Json& value);

struct WandbRunRecord {
  std::string run_id, entity, project, display_name, notes, group, job_type, host;
  std::vector<std::string> tags;
  double start_time = 0;  // Unix seconds
  std::vector<WandbItem> config;
};

struct WandbEnvironment {
  std::string os, program, root, host, executable, writer_id;
  double started_at = 0;
  uint32_t cpu_count = 0;
  uint64_t memory_total = 0;
};

std::string encode_header_record(int64_t num, const std::string& producer,
                                 const std::string& min_consumer, const std::string& stream_id);
std::string encode_run_record(int64_t num, const WandbRunRecord& run);
std::string encode_environment_record(int64_t num, const WandbEnvironment& env,
                                      const std::string& stream_id);
std::string encode_config_record(int64_t num, const std::vector<WandbItem>& items);
// define_metric(name) or define_metric(glob, step_metric=..., step_sync=...).
std::string encode_metric_record(int64_t num, const std::string& name, const std::string& glob_name,
                                 const std::string& step_metric, bool step_sync);
std::string encode_history_record(int64_t num, const std::vector<WandbItem>& items, int64_t step);
// `as_path`: keys as a one-element nested_key, as wandb-core writes the summary it keeps with
// each history row; false: as key, as it writes a summary value the user set
// (run.summary[k] = v).
std::string encode_summary_record(int64_t num, const std::vector<WandbItem>& items,
                                  bool as_path = true);
std::string encode_output_raw_record(int64_t num, bool is_stderr, double time,
                                     const std::string& line);
std::string encode_exit_record(int64_t num, int32_t exit_code, int32_t runtime_s,
                               const std::string& stream_id);

}  // namespace sft
