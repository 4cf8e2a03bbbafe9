// Fetching one file of a repo into the cache: its metadata (HEAD on the resolve URL), then
// its bytes (GET on the Location the Hub redirects to), resumable and verified.
//
//   metadata  X-Repo-Commit (the commit), X-Linked-Etag (LFS: the sha256) or ETag names the
//             blob, X-Linked-Size or Content-Length its size, Location the storage URL
//   bytes     appended to blobs/<etag>.incomplete; an existing one is resumed with
//             "Range: bytes=N-" (a 200 instead of 206 restarts it); the size is checked, and
//             an LFS file's sha256; only then is it renamed to blobs/<etag>
//   retries   on no answer, a dropped connection, 408, 429 (Retry-After honoured) and 5xx,
//             with exponential backoff; a wrong size or checksum discards the partial file
//             and counts as a failed try. Other statuses fail at once (errors.h).
//   disk      free space is checked before a download; a failed write (ENOSPC) names the
//             folder and leaves no blob behind
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "io/hub/cache_repo.h"
#include "io/hub/errors.h"

namespace sft::hub {

struct RetryPolicy {
  int max_attempts = 5;
  int base_delay_ms = 500;  // doubled after each failed try
  int max_delay_ms = 10000;
};

struct HubSession {
  std::string endpoint;
  std::string cache_dir;
  std::vector<std::string> auth_headers;  // "Authorization: Bearer ..." when a token is set
  RetryPolicy retry;
  std::atomic<int64_t>* bytes_done = nullptr;  // progress, may be null
};

struct FileMeta {
  std::string path;  // in the repo
  std::string etag;  // blob name
  std::string commit;
  std::string location;  // where to GET the bytes
  int64_t size = -1;     // -1 = unknown
  bool lfs = false;      // etag is the sha256 of the content
};

// Sends a request, retrying as above; returns the last answer (2xx or not).
HttpResponse send_with_retries(const HubSession& session, const HttpRequest& request);

FileMeta fetch_file_meta(const HubSession& session, const RequestContext& context);

// Downloads the blob of `meta` unless it is in the cache already; returns the bytes fetched.
int64_t download_blob(const HubSession& session, const RequestContext& context,
                      const CacheRepo& cache, const FileMeta& meta);

// Free bytes for an unprivileged writer on the file system holding `dir` (-1 if unknown).
int64_t free_disk_bytes(const std::string& dir);

// The lower-case hex SHA-256 of a file (OpenSSL's libcrypto).
std::string sha256_file(const std::string& path);

}  // namespace sft::hub
