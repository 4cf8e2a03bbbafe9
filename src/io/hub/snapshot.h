// Downloading the files a run needs from one revision of a repo into the Hub cache, and
// returning its snapshot folder (what huggingface_hub's snapshot_download does, for the
// files of plan.h only).
//
// Order: the revision's commit and file list (one API call), every file's metadata (HEAD,
// in parallel), a free-space check for the blobs still missing, the downloads (in parallel,
// one progress line on stderr), the snapshot links, and refs/<revision> last. Files already
// in the cache cost one HEAD and no transfer. Parallel transfers use plain threads: they wait
// on the network, not the CPU, so they stay out of the compute pool (core/thread_pool.h).
#pragma once

#include <string>

#include "io/hub/download_file.h"

namespace sft::hub {

struct SnapshotOptions {
  std::string dataset_config;  // datasets: the config whose files are fetched
  RetryPolicy retry;
  int parallel = 8;  // files in flight at once
  bool progress = true;
};

// Returns snapshots/<commit> of the repo in `cache_dir`. Throws "[hub] ..." (errors.h).
std::string download_snapshot(const std::string& cache_dir, const RepoRef& repo,
                              const std::string& revision, const SnapshotOptions& options);

}  // namespace sft::hub
