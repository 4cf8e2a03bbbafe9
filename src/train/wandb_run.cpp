#include "train/wandb_run.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <ctime>
#include <exception>
#include <filesystem>
#include <random>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "io/atomic_file.h"
#include "train/wandb_files.h"
#include "train/wandb_records.h"

namespace sft {

namespace {

namespace fs = std::filesystem;

// WandbCallback.on_log puts these in the run summary, not in a history row.
constexpr const char* kSingleValueScalars[] = {"train_runtime", "train_samples_per_second",
                                               "train_steps_per_second", "total_flos",
                                               "train_loss"};
bool single_value_scalar(const std::string& key) {
  for (const char* k : kSingleValueScalars)
    if (key == k) return true;
  return false;
}

// transformers' rewrite_logs.
std::string wandb_key(const std::string& key) {
  if (key.rfind("eval_", 0) == 0) return "eval/" + key.substr(5);
  if (key.rfind("test_", 0) == 0) return "test/" + key.substr(5);
  return "train/" + key;
}

std::string random_run_id() {
  // As the SDK's generate_id: 8 characters of [a-z0-9]. Not part of any result, so it
  // may come from the OS's entropy.
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::random_device rd;
  std::string id;
  for (int i = 0; i < 8; ++i) id += kAlphabet[rd() % 36];
  return id;
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

std::string os_name() {
  utsname u{};
  if (uname(&u) != 0) return "Linux";
  return std::string(u.sysname) + "-" + u.release + "-" + u.machine;
}

std::string executable_path() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : p.string();
}

uint64_t memory_total() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

std::string time_stamp(double unix_s) {
  const auto t = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  localtime_r(&t, &tm);  // the SDK names the folder by local time (datetime.now())
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d_%H%M%S", &tm);
  return buf;
}

std::vector<std::string> split_tags(const std::string& text) {
  std::vector<std::string> tags;
  std::stringstream in(text);
  for (std::string t; std::getline(in, t, ',');) {
    const size_t a = t.find_first_not_of(' '), b = t.find_last_not_of(' ');
    if (a != std::string::npos) tags.push_back(t.substr(a, b - a + 1));
  }
  return tags;
}

}  // namespace

std::optional<std::string> process_env(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  return v ? std::optional<std::string>(v) : std::nullopt;
}

WandbSettings wandb_settings_from_env(const std::optional<std::string>& run_name,
                                      const EnvLookup& env) {
  WandbSettings s;
  const std::string mode = env("WANDB_MODE").value_or("offline");
  if (mode == "offline" || mode == "dryrun")
    s.mode = "offline";
  else if (mode == "online" || mode == "shared")
    s.mode = "online";
  else if (mode == "disabled")
    s.mode = "disabled";
  else
    fail("wandb", "WANDB_MODE=" + mode +
                      " is not one of offline, online, disabled (hint: unset it to write an "
                      "offline run)");
  const std::string disabled = env("WANDB_DISABLED").value_or("");
  if (disabled == "true" || disabled == "1" || disabled == "True") s.mode = "disabled";
  s.dir = env("WANDB_DIR").value_or("");
  if (s.dir.empty()) s.dir = fs::current_path().string();
  if (auto p = env("WANDB_PROJECT"); p && !p->empty()) s.project = *p;
  s.entity = env("WANDB_ENTITY").value_or("");
  s.name = run_name.value_or(env("WANDB_NAME").value_or(""));
  s.run_id = env("WANDB_RUN_ID").value_or("");
  if (s.run_id.empty()) s.run_id = random_run_id();
  s.notes = env("WANDB_NOTES").value_or("");
  s.tags = split_tags(env("WANDB_TAGS").value_or(""));
  s.group = env("WANDB_RUN_GROUP").value_or("");
  s.job_type = env("WANDB_JOB_TYPE").value_or("");
  return s;
}

WandbRun::WandbRun(const WandbSettings& settings, const Json& config, int64_t num_parameters,
                   double start_time)
    : settings_(settings), start_time_(start_time), uncaught_at_start_(std::uncaught_exceptions()) {
  const fs::path wandb_dir = fs::path(settings_.dir) / "wandb";
  const std::string name = "offline-run-" + time_stamp(start_time) + "-" + settings_.run_id;
  run_dir_ = (wandb_dir / name).string();
  std::error_code ec;
  fs::create_directories(fs::path(run_dir_) / "files", ec);
  if (ec)
    fail("wandb", "cannot create " + run_dir_ + ": " + ec.message() +
                      " (hint: set WANDB_DIR to a writable folder)");
  // latest-run points at the newest run, relative as the SDK makes it.
  const fs::path latest = wandb_dir / "latest-run";
  fs::remove(latest, ec);
  fs::create_directory_symlink(name, latest, ec);
  log_ = std::make_unique<WandbLogFile>(run_dir_ + "/run-" + settings_.run_id + ".wandb");

  append(encode_header_record(next(), std::string("sft.cpp ") + SFT_VERSION, "0.70.0",
                              settings_.run_id));
  WandbRunRecord run;
  run.run_id = settings_.run_id;
  run.entity = settings_.entity;
  run.project = settings_.project;
  run.display_name = settings_.name;
  run.notes = settings_.notes;
  run.tags = settings_.tags;
  run.group = settings_.group;
  run.job_type = settings_.job_type;
  run.host = host_name();
  run.start_time = start_time;
  run.config = {{"_wandb", "{}"}};
  append(encode_run_record(next(), run));
  WandbEnvironment env;
  env.os = os_name();
  env.program = "sft train";
  env.root = fs::current_path(ec).string();
  env.host = run.host;
  env.executable = executable_path();
  env.started_at = start_time;
  env.cpu_count = std::thread::hardware_concurrency();
  env.memory_total = memory_total();
  append(encode_environment_record(next(), env, settings_.run_id));
  std::vector<WandbItem> items;
  for (const auto& [k, v] : config.items()) items.push_back({k, wandb_value_json(v)});
  append(encode_config_record(next(), items));
  append(encode_metric_record(next(), "train/global_step", "", "", false));
  append(encode_metric_record(next(), "", "*", "train/global_step", true));
  append(encode_config_record(next(), {{"model/num_parameters", std::to_string(num_parameters)}}));

  // files/ (train/wandb_files.h): what the SDK leaves there besides the log.
  Json full_config = config;
  full_config["model/num_parameters"] = num_parameters;
  write_file_atomically(files_path("config.yaml"), wandb_config_yaml(full_config));
  write_file_atomically(files_path("wandb-metadata.json"), wandb_metadata(env).dump(2) + "\n");
  output_log_ = std::fopen(files_path("output.log").c_str(), "a");
  if (!output_log_)
    fail("wandb", "cannot write " + files_path("output.log") + ": " + errno_text(errno) +
                      " (hint: set WANDB_DIR to a writable folder)");
}

std::string WandbRun::files_path(const std::string& name) const {
  return run_dir_ + "/files/" + name;
}

WandbRun::~WandbRun() {
  if (!finished_) {
    try {
      const double now =
          std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
              .count();
      finish(std::uncaught_exceptions() > uncaught_at_start_ ? 1 : 0, now);
    } catch (const std::exception&) {
      // A destructor must not throw; the log keeps what it had.
    }
  }
  if (output_log_) std::fclose(output_log_);
}

void WandbRun::log(const Json& entry, double time) {
  const int64_t global_step = entry.value("step", int64_t{0});
  // The end-of-training values, one summary record each, in the order the Trainer logs them.
  for (const char* k : kSingleValueScalars)
    if (entry.contains(k)) {
      append(encode_summary_record(next(), {{k, wandb_value_json(entry[k])}}, false));
      summary_[k] = entry[k];
    }
  for (const auto& [k, v] : entry.items())
    if (k != "step" && !single_value_scalar(k)) summary_[wandb_key(k)] = v;
  summary_["train/global_step"] = global_step;
  summary_["_step"] = step_;
  summary_["_runtime"] = time - start_time_;
  summary_["_timestamp"] = time;
  std::vector<WandbItem> row;
  for (const auto& [k, v] : entry.items())
    if (k != "step" && !single_value_scalar(k)) row.push_back({wandb_key(k), wandb_value_json(v)});
  row.push_back({"train/global_step", std::to_string(global_step)});
  row.push_back({"_step", std::to_string(step_)});
  row.push_back({"_runtime", wandb_value_json(time - start_time_)});
  row.push_back({"_timestamp", wandb_value_json(time)});
  // wandb-core keeps the run summary at each row's latest values: a summary, then the row.
  append(encode_summary_record(next(), row));
  append(encode_history_record(next(), row, step_));
  ++step_;
}

void WandbRun::output(const std::string& line, double time) {
  append(encode_output_raw_record(next(), true, time, line + "\n"));
  if (output_log_) {
    std::fprintf(output_log_, "%s\n", line.c_str());
    std::fflush(output_log_);
  }
}

void WandbRun::finish(int exit_code, double time) {
  if (finished_) return;
  finished_ = true;
  const double runtime = std::max(0.0, time - start_time_);
  append(encode_exit_record(next(), exit_code, static_cast<int32_t>(std::lround(runtime)),
                            settings_.run_id));
  if (output_log_) std::fclose(output_log_);
  output_log_ = nullptr;
  Json summary = summary_.is_null() ? Json::object() : summary_;
  summary["_wandb"] = {{"runtime", std::lround(runtime)}};
  write_file_atomically(files_path("wandb-summary.json"), summary.dump() + "\n");
}

std::string WandbRun::start_message() const {
  std::string m = "[wandb] offline run " + settings_.run_id + " (project " + settings_.project +
                  ") in " + run_dir_;
  if (settings_.mode == "online")
    m += "; WANDB_MODE=online: sft.cpp does not stream to W&B, it writes the run offline and "
         "`wandb sync` uploads it at the end";
  return m;
}

std::string WandbRun::finish_message() const {
  return "[wandb] upload it with: wandb sync " + run_dir_;
}

}  // namespace sft
