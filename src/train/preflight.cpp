#include "train/preflight.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <system_error>

#include "core/error.h"
#include "data/mixture.h"
#include "data/sources.h"
#include "io/options.h"
#include "model/model_dir.h"
#include "optim/schedule.h"
#include "train/adapter_io.h"
#include "train/checkpoint_dir.h"

namespace sft {

namespace {

namespace fs = std::filesystem;
constexpr std::string_view kComponent = "train";

bool resuming(const TrainingArgs& a) {
  if (!a.resume_from_checkpoint) return false;
  const std::string& v = *a.resume_from_checkpoint;
  return !v.empty() && v != "false" && v != "False";
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Creates and removes a probe file in `dir`: the one sure test that a run can write there
// (permissions, read-only mounts, ACLs).
void probe_writable(const std::string& dir, const std::string& output_dir) {
  const std::string probe = dir + "/.sft_write_probe_" + std::to_string(::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0) {
    const int err = errno;
    fail(kComponent, "output_dir " + output_dir + " is not writable: cannot create a file in " +
                         dir + ": " + errno_text(err) +
                         " (hint: pick a folder you can write to with --output_dir, or fix its "
                         "permissions)");
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

void check_output_dir(const TrainingArgs& a) {
  const fs::path out(a.output_dir);
  std::error_code ec;
  const fs::file_status status = fs::status(out, ec);
  if (fs::exists(status) && !fs::is_directory(status)) {
    fail(kComponent, "output_dir " + a.output_dir +
                         " exists and is not a folder (hint: pick another --output_dir)");
  }
  if (fs::is_directory(status)) {
    probe_writable(a.output_dir, a.output_dir);
    if (a.overwrite_output_dir || resuming(a) || fs::is_empty(out, ec)) return;
    std::string hint =
        "pick a new --output_dir or empty this one; --overwrite_output_dir true (an sft.cpp "
        "flag; TRL 1.16 has none) writes into it anyway";
    if (latest_checkpoint(a.output_dir)) {
      hint += "; --resume_from_checkpoint true continues from its latest checkpoint";
    } else if (const std::vector<std::string> partial = interrupted_saves(a.output_dir);
               !partial.empty()) {
      // Never point at a resume that would be refused: a half-written save is not resumable.
      hint += "; it holds no complete checkpoint, only " + partial.front() +
              ", half-written by a run killed while saving, which cannot be resumed";
    }
    fail(kComponent,
         "output_dir " + a.output_dir + " already exists and is not empty (hint: " + hint + ")");
  }
  // Not there yet: the nearest existing parent must be a folder we can write in.
  fs::path parent = fs::absolute(out, ec).parent_path();
  while (!parent.empty() && !fs::exists(parent, ec) && parent != parent.root_path())
    parent = parent.parent_path();
  if (!fs::is_directory(parent, ec)) {
    fail(kComponent, "output_dir " + a.output_dir + ": " + parent.string() +
                         " is not a folder (hint: pick another --output_dir)");
  }
  probe_writable(parent.string(), a.output_dir);
}

void check_resume(const TrainingArgs& a) {
  if (!resuming(a)) return;
  const std::string& v = *a.resume_from_checkpoint;
  if (v == "true" || v == "True") {
    if (!latest_checkpoint(a.output_dir)) fail(kComponent, explain_no_checkpoint(a.output_dir));
    return;
  }
  // A TRL checkpoint, a model folder, a missing one: each is named with what sft can do with it.
  // A TRL checkpoint with weights and tokenizer continues (with a notice); anything else that
  // is not an sft checkpoint is named with what sft can do with it.
  if (!fs::exists(fs::path(v) / kCheckpointMarker) && !is_continuable_trl_checkpoint(v))
    fail(kComponent, explain_not_a_checkpoint(v, a.output_dir));
}

bool has_glob(const std::string& s) {
  return s.find_first_of("*?[") != std::string::npos;
}

void check_local_path(std::string_view component, const std::string& flag, const std::string& name,
                      const char* what) {
  if (name.empty() || has_glob(name) || !looks_like_local_path(name)) return;
  std::error_code ec;
  if (fs::exists(name, ec)) return;
  fail(component, flag + " " + name + ": " + what + " not found (looked for " +
                      fs::absolute(name, ec).string() +
                      "; hint: check the path; a Hub id looks like ORG/NAME without a file "
                      "extension)");
}

void check_datasets(const TrainingArgs& a) {
  // A mixture: every entry's files (data/mixture.h); --dataset_name is then ignored.
  if (!a.datasets.is_null()) {
    const std::vector<data::MixtureEntry> entries = data::parse_mixture(a.datasets);
    if (!entries.empty()) {
      for (size_t i = 0; i < entries.size(); ++i) {
        if (entries[i].data_files.empty())
          check_local_path("data", "--datasets[" + std::to_string(i) + "] path", entries[i].path,
                           "dataset file");
        data::mixture_entry_files(entries[i], i);
      }
      return;
    }
  }
  check_local_path("data", "--dataset_name", a.dataset_name, "dataset file");
  data::DatasetSource source;
  source.name = a.dataset_name;
  source.config = a.dataset_config.value_or("");
  data::resolve_split_files(source, a.dataset_train_split);
}

void check_schedule(const TrainingArgs& a) {
  try {
    make_schedule_config(parse_schedule_type(a.lr_scheduler_type), 1, 100, a.learning_rate,
                         a.lr_scheduler_kwargs);
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
    fail_usage("args", std::string(e.what()));
  }
}

}  // namespace

bool looks_like_local_path(const std::string& name) {
  if (name.rfind("./", 0) == 0 || name.rfind("../", 0) == 0 || name.rfind("/", 0) == 0 ||
      name.rfind("~", 0) == 0 || name == "." || name == "..")
    return true;
  for (const char* ext : {".jsonl", ".json", ".parquet", ".csv", ".txt", ".arrow", ".jinja"}) {
    if (ends_with(name, ext)) return true;
  }
  return false;
}

OutputDirBefore preflight_train(const TrainingArgs& a) {
  check_schedule(a);
  check_output_dir(a);
  check_resume(a);
  if (a.chat_template_path)
    check_local_path("train", "--chat_template_path", *a.chat_template_path, "file");
  check_datasets(a);
  check_local_path("model", "--model_name_or_path", a.model_name_or_path, "model folder");
  // A PEFT adapter folder has no config.json: its base is found (and checked) when it loads.
  if (!is_adapter_dir(a.model_name_or_path))
    open_model_dir(a.model_name_or_path, a.model_revision);  // downloads it when not cached

  OutputDirBefore before;
  before.path = a.output_dir;
  std::error_code ec;
  before.existed = fs::is_directory(a.output_dir, ec);
  if (before.existed) {
    for (const fs::directory_entry& e : fs::directory_iterator(a.output_dir, ec))
      before.entries.insert(e.path().filename().string());
  }
  return before;
}

int restore_output_dir(const OutputDirBefore& before) {
  std::error_code ec;
  if (before.path.empty() || !fs::is_directory(before.path, ec)) return 0;
  try {
    if (latest_checkpoint(before.path)) return 0;  // a resumable run: keep everything
  } catch (const std::exception&) {
    return 0;
  }
  int removed = 0;
  std::vector<fs::path> created;
  for (const fs::directory_entry& e : fs::directory_iterator(before.path, ec)) {
    if (!before.entries.count(e.path().filename().string())) created.push_back(e.path());
  }
  for (const fs::path& p : created) {
    if (fs::remove_all(p, ec) > 0 && !ec) ++removed;
  }
  if (!before.existed && fs::is_empty(before.path, ec)) fs::remove(before.path, ec);
  return removed;
}

}  // namespace sft
