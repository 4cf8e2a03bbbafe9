// A small Hugging Face Hub for the tests: HTTP/1.1 on 127.0.0.1 (an ephemeral port), one
// thread per connection, answering the calls sft's Hub client makes, the way the Hub does:
//
//   GET  /api/{models|datasets}/{repo}/revision/{rev}   {"id","sha","siblings":[{"rfilename"}]}
//   GET  /api/{models|datasets}/{repo}/tree/{rev}       the recursive listing (huggingface_hub's
//                                                       snapshot_download reads it)
//   HEAD/GET /{repo}/resolve/{rev}/{path}, /datasets/{repo}/resolve/{rev}/{path}
//        LFS files (*.safetensors, *.parquet): 302 to /lfs/<sha256> with X-Linked-Etag
//        (the sha256) and X-Linked-Size; others: 200 with ETag and the bytes. X-Repo-Commit.
//   GET  /lfs/<sha256>   the bytes, honouring "Range: bytes=N-" (206)
//   404s carry X-Error-Code RepoNotFound / RevisionNotFound / EntryNotFound.
//   With accept_uploads(DIR): POST /api/repos/create, POST /{repo}.git/info/lfs/objects/batch,
//   PUT /lfs-upload/<oid>, POST /lfs-verify/<oid>, POST /api/models/{repo}/commit/{rev}
//   (ndjson), after which the new files are served like the others.
//
// A repo is a local folder served at one revision (a branch name) and its commit (a hash of
// the repo's name and files). Faults, each counted down as it fires: a connection dropped
// half-way through an LFS body, an LFS body with one byte flipped, 500s or 429s on any
// request, and gated repos (401 without the token, 403 with another).
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace sft::test {

struct HubRepoSpec {
  bool dataset = false;
  std::string id;      // "org/name"
  std::string folder;  // served files (hidden ones skipped)
  std::string revision = "main";
};

struct HubFaults {
  std::string drop_file;  // repo path whose LFS body is cut half-way
  int drop_times = 0;
  std::string corrupt_file;  // repo path whose LFS body has a byte flipped
  int corrupt_times = 0;
  int status_times = 0;  // the next N requests answer `status` (500, 429, ...)
  int status = 500;
  std::map<std::string, std::string> renamed;  // old id → id: 307 to the new name
  std::string huge_file;        // repo path whose LFS size is announced as 2^60 bytes (a full disk)
  std::set<std::string> gated;  // repo ids that need "Authorization: Bearer <token>"
  std::string token = "hf_test_token";
};

class HubTestServer {
 public:
  explicit HubTestServer(std::vector<HubRepoSpec> repos, HubFaults faults = {});
  ~HubTestServer();
  HubTestServer(const HubTestServer&) = delete;
  HubTestServer& operator=(const HubTestServer&) = delete;

  int port() const { return port_; }
  std::string endpoint() const;  // "http://127.0.0.1:PORT"
  void set_faults(HubFaults faults);
  // "METHOD /path" (+ " range=N" for range requests) of every request so far, in order.
  std::vector<std::string> requests() const;
  // The commit a repo is served at.
  std::string commit_of(const std::string& id) const;
  // Accepts pushes (create repo, LFS batch + PUT + verify, commit) with the faults' token;
  // repos created or committed to live under `dir`. Pushes must not overlap downloads.
  void accept_uploads(const std::string& dir);

 private:
  struct File {
    std::string path;  // on disk
    std::string sha256;
    int64_t size = 0;
    bool lfs = false;
  };
  struct Repo {
    HubRepoSpec spec;
    std::string commit;
    std::map<std::string, File> files;  // repo path → file
  };
  struct Request {
    std::string method, path, body;
    std::map<std::string, std::string> headers;  // lower-case names
    std::string header(const std::string& name) const {
      auto it = headers.find(name);
      return it == headers.end() ? "" : it->second;
    }
  };
  std::string uploads_dir_;

  Repo index_repo(const HubRepoSpec& spec) const;
  void reindex_lfs();
  std::string answer_upload(const Request& request, bool& handled);
  void accept_loop();
  void serve(int fd);
  std::string answer(const Request& request, int fd, bool& sent);
  std::string tree_json(const Repo& repo) const;

  std::map<std::string, Repo> repos_;  // "model:org/name" / "dataset:org/name"
  std::map<std::string, const File*> lfs_;
  HubFaults faults_;
  mutable std::mutex mutex_;
  std::vector<std::string> log_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;
  std::vector<std::thread> connections_;
};

}  // namespace sft::test
