#include "io/hub/download_file.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <memory>
#include <thread>

#include "core/error.h"
#include "core/log.h"

namespace sft::hub {

namespace fs = std::filesystem;

namespace {

bool worth_retry(const HttpResponse& r) {
  return r.status == 0 || r.status == 408 || r.status == 429 || r.status >= 500;
}

void wait_before_retry(const RetryPolicy& policy, int attempt, const HttpResponse& r) {
  int64_t ms = static_cast<int64_t>(policy.base_delay_ms) << std::min(attempt - 1, 20);
  if (r.status == 429) {
    const std::string after = r.header("retry-after");
    if (!after.empty() && std::all_of(after.begin(), after.end(), ::isdigit))
      ms = std::max<int64_t>(ms, std::stoll(after) * 1000);
  }
  ms = std::min<int64_t>(ms, policy.max_delay_ms);
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

std::string normalize_etag(std::string etag) {
  if (etag.rfind("W/", 0) == 0) etag = etag.substr(2);
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"')
    etag = etag.substr(1, etag.size() - 2);
  return etag;
}

bool is_sha256(const std::string& s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

int64_t parse_size(const std::string& s) {
  if (s.empty() || !std::all_of(s.begin(), s.end(), ::isdigit)) return -1;
  return std::stoll(s);
}

int64_t file_size_or_zero(const fs::path& p) {
  std::error_code ec;
  const auto n = fs::file_size(p, ec);
  return ec ? 0 : static_cast<int64_t>(n);
}

// Appends a GET's body to the .incomplete file; records the first write error instead of
// throwing through libcurl.
struct PartialFile {
  std::string path;
  int fd = -1;
  int64_t offset = 0;  // bytes in the file
  int write_errno = 0;
  bool ranged = false;  // this answer's first bytes are still to come after a Range request

  bool append(long status, std::string_view bytes) {
    const bool restart = ranged && status == 200;  // the server ignored the range: start over
    ranged = false;
    if (restart) {
      if (::ftruncate(fd, 0) != 0 || ::lseek(fd, 0, SEEK_SET) != 0) {
        write_errno = errno;
        return false;
      }
      offset = 0;
    }
    while (!bytes.empty()) {
      const ssize_t n = ::write(fd, bytes.data(), bytes.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        write_errno = n < 0 ? errno : EIO;
        return false;
      }
      bytes.remove_prefix(static_cast<size_t>(n));
      offset += n;
    }
    return true;
  }
};

[[noreturn]] void fail_write(const RequestContext& c, const std::string& path, int err) {
  const std::string folder = fs::path(path).parent_path().string();
  fail("hub", "cannot write " + c.file + " of " + c.repo.kind() + " '" + c.repo.id + "' to " +
                  path + ": " + errno_text(err) +
                  (err == ENOSPC ? " (hint: the disk holding " + folder +
                                       " is full; free space there or set HF_HUB_CACHE to a "
                                       "folder on a bigger disk)"
                                 : " (hint: check the permissions of " + folder + ")"));
}

}  // namespace

HttpResponse send_with_retries(const HubSession& session, const HttpRequest& request) {
  HttpResponse r;
  for (int attempt = 1; attempt <= session.retry.max_attempts; ++attempt) {
    r = http_send(request);
    if (!worth_retry(r) || attempt == session.retry.max_attempts) break;
    log_debug("[hub] ", request.method, " ", request.url, ": ",
              r.status == 0 ? r.transport_error : "HTTP " + std::to_string(r.status),
              "; retrying (", attempt, "/", session.retry.max_attempts, ")");
    wait_before_retry(session.retry, attempt, r);
  }
  return r;
}

FileMeta fetch_file_meta(const HubSession& session, const RequestContext& context) {
  HttpRequest request;
  request.method = "HEAD";
  request.url = resolve_url(session.endpoint, context.repo, context.revision, context.file);
  request.headers = session.auth_headers;
  HttpResponse r = send_with_retries(session, request);
  // A renamed repo answers with a relative redirect to its new name (no X-Repo-Commit):
  // followed, as huggingface_hub does; a redirect to the storage host is the answer itself.
  for (int hop = 0; hop < 5 && r.status >= 300 && r.status < 400 &&
                    r.header("x-repo-commit").empty() && r.header("location").rfind('/', 0) == 0;
       ++hop) {
    request.url = url_origin(request.url) + r.header("location");
    r = send_with_retries(session, request);
  }
  // 2xx, or a redirect to the storage (the Hub's 302 for LFS files).
  if (r.status < 200 || r.status >= 400) fail_request(context, request.url, r);
  FileMeta meta;
  meta.path = context.file;
  meta.commit = r.header("x-repo-commit");
  const std::string linked = normalize_etag(r.header("x-linked-etag"));
  meta.etag = linked.empty() ? normalize_etag(r.header("etag")) : linked;
  meta.lfs = !linked.empty() && is_sha256(linked);
  meta.size = parse_size(r.header("x-linked-size"));
  if (meta.size < 0 && r.status < 300) meta.size = parse_size(r.header("content-length"));
  meta.location = r.status >= 300 ? r.header("location") : request.url;
  if (!meta.location.empty() && meta.location[0] == '/')
    meta.location = url_origin(request.url) + meta.location;  // relative redirect
  if (meta.commit.empty() || meta.etag.empty() || meta.location.empty() ||
      meta.etag.find('/') != std::string::npos) {
    fail("hub", request.url +
                    " answered without the X-Repo-Commit / ETag / Location headers "
                    "of a Hugging Face Hub (hint: HF_ENDPOINT=" +
                    session.endpoint + " must point to a Hub or a mirror of its API)");
  }
  return meta;
}

int64_t download_blob(const HubSession& session, const RequestContext& context,
                      const CacheRepo& cache, const FileMeta& meta) {
  if (fs::exists(cache.blob_path(meta.etag))) return 0;
  FileLock lock(cache.lock_path(meta.etag));  // another sft or huggingface_hub on this blob
  if (fs::exists(cache.blob_path(meta.etag))) return 0;
  const std::string partial_path = cache.incomplete_path(meta.etag).string();
  fs::create_directories(fs::path(partial_path).parent_path());

  PartialFile partial;
  partial.path = partial_path;
  partial.offset = file_size_or_zero(partial_path);
  if (meta.size >= 0 && partial.offset > meta.size) {
    fs::remove(partial_path);
    partial.offset = 0;
  }
  const int64_t free_bytes = free_disk_bytes(fs::path(partial_path).parent_path().string());
  if (meta.size >= 0 && free_bytes >= 0 && free_bytes < meta.size - partial.offset)
    fail_write(context, partial_path, ENOSPC);
  partial.fd = ::open(partial_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (partial.fd < 0) fail_write(context, partial_path, errno);
  std::unique_ptr<int, void (*)(int*)> close_fd(&partial.fd, [](int* fd) { ::close(*fd); });

  const int64_t resumed_from = partial.offset;
  std::string last_problem;
  HttpResponse last;
  for (int attempt = 1; attempt <= session.retry.max_attempts; ++attempt) {
    if (attempt > 1) wait_before_retry(session.retry, attempt - 1, last);
    HttpRequest request;
    request.url = meta.location;
    request.follow_redirects = true;
    // The token goes to the Hub's own host only, never to a storage host it redirects to.
    if (url_origin(meta.location) == url_origin(session.endpoint))
      request.headers = session.auth_headers;
    if (partial.offset > 0) request.range_start = partial.offset;
    partial.ranged = partial.offset > 0;
    const int64_t before = partial.offset;
    last = http_send(request, [&](long status, std::string_view bytes) {
      const int64_t start = partial.offset;
      const bool ok = partial.append(status, bytes);
      if (session.bytes_done != nullptr) *session.bytes_done += partial.offset - start;
      return ok;
    });
    if (partial.write_errno != 0) fail_write(context, partial_path, partial.write_errno);
    if (last.status != 0 && !worth_retry(last) && (last.status < 200 || last.status >= 300)) {
      if (last.status == 416) {  // range past the end: the partial file is stale
        ::ftruncate(partial.fd, 0);
        partial.offset = 0;
        last_problem = "HTTP 416";
        continue;
      }
      fail_request(context, request.url, last);
    }
    if (last.status == 0 || worth_retry(last)) {
      last_problem =
          last.status == 0 ? last.transport_error : "HTTP " + std::to_string(last.status);
      log_debug("[hub] ", meta.path, ": ", last_problem, " after ", partial.offset - before,
                " bytes; resuming (", attempt, "/", session.retry.max_attempts, ")");
      continue;
    }
    if (meta.size >= 0 && partial.offset != meta.size) {
      last_problem =
          "got " + std::to_string(partial.offset) + " bytes, expected " + std::to_string(meta.size);
      ::ftruncate(partial.fd, 0);
      partial.offset = 0;
      continue;
    }
    if (::fsync(partial.fd) != 0) fail_write(context, partial_path, errno);
    if (meta.lfs) {
      const std::string actual = sha256_file(partial_path);
      if (actual != meta.etag) {
        last_problem = "sha256 " + actual + " instead of " + meta.etag;
        ::ftruncate(partial.fd, 0);
        partial.offset = 0;
        continue;
      }
    }
    cache.publish_blob(meta.etag);
    return partial.offset - resumed_from;
  }
  std::error_code ec;
  if (last_problem.rfind("sha256", 0) == 0 || last_problem.rfind("got ", 0) == 0)
    fs::remove(partial_path, ec);  // a corrupt partial file is worth nothing
  fail("hub", "cannot download " + meta.path + " of " + context.repo.kind() + " '" +
                  context.repo.id + "' from " + meta.location + " after " +
                  std::to_string(session.retry.max_attempts) + " tries: " + last_problem +
                  " (hint: run again to resume from the " + std::to_string(partial.offset) +
                  " bytes kept in " + partial_path + ", or check the network / HF_ENDPOINT)");
}

int64_t free_disk_bytes(const std::string& dir) {
  struct statvfs s {};
  if (::statvfs(dir.c_str(), &s) != 0) return -1;
  return static_cast<int64_t>(s.f_bavail) * static_cast<int64_t>(s.f_frsize);
}

std::string sha256_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("hub", "cannot read " + path + ": " + errno_text(errno));
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> md(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  EVP_DigestInit_ex(md.get(), EVP_sha256(), nullptr);
  std::vector<unsigned char> buffer(1 << 20);
  for (;;) {
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      fail("hub", "cannot read " + path + ": " + errno_text(err));
    }
    if (n == 0) break;
    EVP_DigestUpdate(md.get(), buffer.data(), static_cast<size_t>(n));
  }
  ::close(fd);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(md.get(), digest, &length);
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 15];
  }
  return out;
}

}  // namespace sft::hub
