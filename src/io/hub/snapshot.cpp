#include "io/hub/snapshot.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "core/log.h"
#include "core/progress.h"
#include "io/hub/plan.h"

namespace sft::hub {

namespace fs = std::filesystem;

namespace {

// Runs body(i) for i in [0, n) on up to `threads` threads; the first exception stops the
// others from taking new items and is rethrown here.
void run_parallel(size_t n, int threads, const std::function<void(size_t)>& body) {
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex mutex;
  auto worker = [&] {
    for (size_t i = next++; i < n && !failed; i = next++) {
      try {
        body(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!error) error = std::current_exception();
        failed = true;
      }
    }
  };
  std::vector<std::thread> pool;
  const size_t count = std::min<size_t>(n, static_cast<size_t>(std::max(1, threads)));
  for (size_t t = 1; t < count; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

// "downloading model Org/Name (3 files, 12.3M): 45% 5.6M, 2.1M/s" on one line: redrawn on
// a terminal, printed at the start and the end otherwise.
class ByteProgress {
 public:
  ByteProgress(std::string label, int64_t total, bool enabled)
      : label_(std::move(label)),
        total_(total),
        enabled_(enabled),
        tty_(::isatty(2) == 1),
        start_(std::chrono::steady_clock::now()) {
    if (!enabled_) return;
    if (!tty_) log_info(label_, " ...");
    if (tty_) ticker_ = std::thread([this] { tick(); });
  }
  ~ByteProgress() { finish(); }

  std::atomic<int64_t> done{0};

  void finish() {
    if (!enabled_ || finished_.exchange(true)) return;
    if (ticker_.joinable()) ticker_.join();
    if (tty_) {
      std::fprintf(stderr, "\r%s\n", line().c_str());
    } else {
      log_info(line());
    }
  }

 private:
  std::string line() const {
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const double d = static_cast<double>(done.load());
    std::string out = label_ + ": " + format_si(d) + "B";
    if (total_ > 0) out += " / " + format_si(static_cast<double>(total_)) + "B";
    if (s > 0) out += ", " + format_si(d / s) + "B/s, " + format_duration(s);
    return out;
  }
  void tick() {
    while (!finished_) {
      std::fprintf(stderr, "\r%s\x1b[K", line().c_str());
      for (int i = 0; i < 5 && !finished_; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  std::string label_;
  int64_t total_;
  bool enabled_, tty_;
  std::chrono::steady_clock::time_point start_;
  std::atomic<bool> finished_{false};
  std::thread ticker_;
};

HubSession make_session(const std::string& cache_dir, const RetryPolicy& retry) {
  HubSession s;
  s.endpoint = hub_endpoint();
  s.cache_dir = cache_dir;
  s.retry = retry;
  if (auto token = hub_token()) s.auth_headers.push_back("Authorization: Bearer " + *token);
  return s;
}

}  // namespace

std::string download_snapshot(const std::string& cache_dir, const RepoRef& repo,
                              const std::string& revision, const SnapshotOptions& options) {
  HubSession session = make_session(cache_dir, options.retry);
  RequestContext context{repo, revision, "", cache_dir, !session.auth_headers.empty()};
  RevisionInfo info = fetch_revision_info(session, context);
  std::string used_revision = revision;
  std::vector<std::string> files;
  if (repo.type == HubRepoType::kModel) {
    try {
      files = plan_model_files(info.files);
    } catch (const Error& e) {
      fail("hub", std::string("model '") + repo.id + "' at revision '" + revision +
                      "': " + std::string(e.what()).substr(6));
    }
  } else {
    files = plan_dataset_files(info.files, options.dataset_config);
    if (files.empty() && revision == "main") {
      // No data files sft reads (a loading script, say): the Hub's parquet conversion.
      used_revision = "refs/convert/parquet";
      context.revision = used_revision;
      info = fetch_revision_info(session, context);
      files = plan_dataset_files(info.files, options.dataset_config);
    }
    if (files.empty())
      fail("hub",
           "dataset '" + repo.id + "' at revision '" + revision +
               "' has no .parquet/.jsonl/.json data files" +
               (options.dataset_config.empty() ? std::string()
                                               : " for config '" + options.dataset_config + "'") +
               " (hint: check --dataset_config; the repo lists " +
               std::to_string(info.files.size()) + " files)");
  }
  context.revision = info.commit;  // every file from the same commit

  std::vector<FileMeta> metas(files.size());
  run_parallel(files.size(), options.parallel, [&](size_t i) {
    RequestContext c = context;
    c.file = files[i];
    metas[i] = fetch_file_meta(session, c);
  });

  const CacheRepo cache(cache_dir, repo);
  int64_t missing = 0;
  size_t missing_files = 0;
  for (const FileMeta& m : metas) {
    if (fs::exists(cache.blob_path(m.etag)) || m.size < 0) continue;
    missing += m.size;
    ++missing_files;
  }
  fs::create_directories(cache.root() / "blobs");
  const int64_t free_bytes = free_disk_bytes((cache.root() / "blobs").string());
  if (free_bytes >= 0 && missing > free_bytes)
    fail("hub", std::string(repo.kind()) + " '" + repo.id + "' needs " +
                    format_si(static_cast<double>(missing)) + "B in " +
                    (cache.root() / "blobs").string() + " but the disk has " +
                    format_si(static_cast<double>(free_bytes)) +
                    "B free (hint: free space there or set HF_HUB_CACHE to a folder on a "
                    "bigger disk)");

  {
    ByteProgress progress(std::string("[hub] downloading ") + repo.kind() + " " + repo.id + " (" +
                              std::to_string(missing_files) + " of " +
                              std::to_string(files.size()) + " files)",
                          missing, options.progress && missing_files > 0);
    session.bytes_done = &progress.done;
    run_parallel(metas.size(), options.parallel, [&](size_t i) {
      RequestContext c = context;
      c.file = metas[i].path;
      download_blob(session, c, cache, metas[i]);
      cache.link(info.commit, metas[i].path, metas[i].etag);
    });
    progress.finish();
  }
  cache.write_ref(used_revision, info.commit);
  return cache.snapshot_dir(info.commit).string();
}

}  // namespace sft::hub
