#include "train/wandb_records.h"

#include <cmath>

#include "train/protobuf_writer.h"

namespace sft {

namespace {

// Field numbers of Record (wandb_internal.proto).
enum RecordField : uint32_t {
  kNum = 1,
  kHistory = 2,
  kSummary = 3,
  kConfig = 5,
  kTelemetry = 11,
  kMetric = 12,
  kOutputRaw = 13,
  kRun = 17,
  kExit = 18,
  kHeader = 21,
  kEnvironment = 26,
  kInfo = 200,
};

ProtoWriter timestamp(double unix_s) {
  ProtoWriter t;
  const double whole = std::floor(unix_s);
  const auto nanos = static_cast<int64_t>(std::llround((unix_s - whole) * 1e9));
  int64_t seconds = static_cast<int64_t>(whole);
  int64_t ns = nanos;
  if (ns >= 1000000000) {
    ++seconds;
    ns -= 1000000000;
  }
  if (seconds != 0) t.varint(1, static_cast<uint64_t>(seconds));
  if (ns != 0) t.varint(2, static_cast<uint64_t>(ns));
  return t;
}

void put_string(ProtoWriter& w, uint32_t field, const std::string& s) {
  if (!s.empty()) w.bytes(field, s);  // proto3: empty strings are left out
}

ProtoWriter record_info(const std::string& stream_id) {
  ProtoWriter info;
  put_string(info, 1, stream_id);
  return info;
}

// `key_field` 1 = key (ConfigItem), 2 = a one-element nested_key (History/SummaryItem).
ProtoWriter items_message(const std::vector<WandbItem>& items, uint32_t key_field) {
  ProtoWriter m;
  for (const WandbItem& it : items) {
    ProtoWriter item;
    item.bytes(key_field, it.key);
    item.bytes(16, it.value_json);
    m.message(1, item);
  }
  return m;
}

std::string record(int64_t num, uint32_t field, const ProtoWriter& body,
                   const std::string& stream_id = "") {
  // wandb-core (Go) marshals the fields outside the record_type oneof first, so _info comes
  // before the body.
  ProtoWriter r;
  r.varint(kNum, static_cast<uint64_t>(num));
  if (!stream_id.empty()) r.message(kInfo, record_info(stream_id));
  r.message(field, body);
  return r.data();
}

}  // namespace

std::string wandb_value_json(const Json& value) {
  if (value.is_number_float()) {
    const double v = value.get<double>();
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  }
  return value.dump();
}

std::string encode_header_record(int64_t num, const std::string& producer,
                                 const std::string& min_consumer, const std::string& stream_id) {
  ProtoWriter version;
  put_string(version, 1, producer);
  put_string(version, 2, min_consumer);
  ProtoWriter header;
  header.message(1, version);
  return record(num, kHeader, header, stream_id);
}

std::string encode_run_record(int64_t num, const WandbRunRecord& run) {
  ProtoWriter r;
  put_string(r, 1, run.run_id);
  put_string(r, 2, run.entity);
  put_string(r, 3, run.project);
  if (!run.config.empty()) r.message(4, items_message(run.config, 1));
  put_string(r, 6, run.group);
  put_string(r, 7, run.job_type);
  put_string(r, 8, run.display_name);
  put_string(r, 9, run.notes);
  for (const std::string& tag : run.tags) r.bytes(10, tag);
  put_string(r, 13, run.host);
  r.message(17, timestamp(run.start_time));
  // Telemetry: an offline run from the C++ library (Feature.offline 4, Feature.lib_cpp 57).
  ProtoWriter feature;
  feature.boolean(4, true);
  feature.boolean(57, true);
  ProtoWriter telemetry;
  telemetry.message(3, feature);
  telemetry.bytes(13, "linux-x86_64");
  r.message(19, telemetry);
  return record(num, kRun, r, run.run_id);
}

std::string encode_environment_record(int64_t num, const WandbEnvironment& env,
                                      const std::string& stream_id) {
  ProtoWriter e;
  put_string(e, 1, env.os);
  e.message(3, timestamp(env.started_at));
  put_string(e, 6, env.program);
  put_string(e, 11, env.root);
  put_string(e, 12, env.host);
  put_string(e, 14, env.executable);
  if (env.cpu_count) {
    e.varint(16, env.cpu_count);
    e.varint(17, env.cpu_count);
  }
  if (env.memory_total) {
    ProtoWriter memory;
    memory.varint(1, env.memory_total);
    e.message(21, memory);
  }
  put_string(e, 199, env.writer_id);
  return record(num, kEnvironment, e, stream_id);
}

std::string encode_config_record(int64_t num, const std::vector<WandbItem>& items) {
  return record(num, kConfig, items_message(items, 1));
}

std::string encode_metric_record(int64_t num, const std::string& name, const std::string& glob_name,
                                 const std::string& step_metric, bool step_sync) {
  ProtoWriter m;
  put_string(m, 1, name);
  put_string(m, 2, glob_name);
  put_string(m, 4, step_metric);
  ProtoWriter options;
  if (step_sync) options.boolean(1, true);
  options.boolean(3, true);  // defined: set by define_metric, not inferred
  m.message(6, options);
  return record(num, kMetric, m);
}

std::string encode_history_record(int64_t num, const std::vector<WandbItem>& items, int64_t step) {
  ProtoWriter h = items_message(items, 2);
  ProtoWriter s;
  if (step != 0) s.varint(1, static_cast<uint64_t>(step));
  h.message(2, s);
  return record(num, kHistory, h);
}

std::string encode_summary_record(int64_t num, const std::vector<WandbItem>& items, bool as_path) {
  return record(num, kSummary, items_message(items, as_path ? 2 : 1));
}

std::string encode_output_raw_record(int64_t num, bool is_stderr, double time,
                                     const std::string& line) {
  ProtoWriter o;
  if (!is_stderr) o.varint(1, 1);
  o.message(2, timestamp(time));
  put_string(o, 3, line);
  return record(num, kOutputRaw, o);
}

std::string encode_exit_record(int64_t num, int32_t exit_code, int32_t runtime_s,
                               const std::string& stream_id) {
  ProtoWriter e;
  // int32 fields: a negative value is sign-extended to 64 bits on the wire.
  if (exit_code != 0) e.varint(1, static_cast<uint64_t>(static_cast<int64_t>(exit_code)));
  if (runtime_s != 0) e.varint(2, static_cast<uint64_t>(static_cast<int64_t>(runtime_s)));
  return record(num, kExit, e, stream_id);
}

}  // namespace sft
