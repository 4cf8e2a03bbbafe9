#include "io/hub_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "io/hub/download_file.h"

namespace sft::test {

namespace fs = std::filesystem;

namespace {

std::string sha256_hex(const std::string& text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(text.data(), text.size(), digest, &n, EVP_sha256(), nullptr);
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < n; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 15];
  }
  return out;
}

std::string url_decode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

bool send_all(int fd, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t k = ::send(fd, data, n, MSG_NOSIGNAL);
    if (k <= 0) return false;
    data += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

HubTestServer::HubTestServer(std::vector<HubRepoSpec> repos, HubFaults faults)
    : faults_(std::move(faults)) {
  for (HubRepoSpec& spec : repos) {
    const std::string key = (spec.dataset ? "dataset:" : "model:") + spec.id;
    repos_[key] = index_repo(spec);
  }
  reindex_lfs();

  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) throw std::runtime_error("hub test server: socket() failed");
  const int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;  // ephemeral
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen_fd_, 64) != 0)
    throw std::runtime_error("hub test server: cannot listen on 127.0.0.1");
  socklen_t len = sizeof addr;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

HubTestServer::~HubTestServer() {
  stopping_ = true;
  ::shutdown(listen_fd_, SHUT_RDWR);  // wakes accept()
  acceptor_.join();
  ::close(listen_fd_);
  for (std::thread& t : connections_) t.join();
}

HubTestServer::Repo HubTestServer::index_repo(const HubRepoSpec& spec) const {
  Repo repo;
  std::string listing = spec.id;
  std::vector<fs::path> paths;
  for (const auto& e : fs::recursive_directory_iterator(spec.folder))
    if (e.is_regular_file()) paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  for (const fs::path& p : paths) {
    const std::string rel = p.lexically_relative(spec.folder).generic_string();
    if (rel.empty() || rel[0] == '.' || rel.find("/.") != std::string::npos) continue;
    File f;
    f.path = p.string();
    f.size = static_cast<int64_t>(fs::file_size(p));
    f.sha256 = hub::sha256_file(f.path);
    f.lfs = p.extension() == ".safetensors" || p.extension() == ".parquet";
    listing += "\n" + rel + " " + f.sha256;
    repo.files[rel] = f;
  }
  repo.commit = sha256_hex(listing).substr(0, 40);
  repo.spec = spec;
  return repo;
}

void HubTestServer::reindex_lfs() {
  lfs_.clear();
  for (auto& [key, repo] : repos_)
    for (auto& [rel, file] : repo.files)
      if (file.lfs) lfs_[file.sha256] = &file;
}

void HubTestServer::accept_uploads(const std::string& dir) {
  std::lock_guard<std::mutex> lock(mutex_);
  uploads_dir_ = dir;
  fs::create_directories(fs::path(dir) / ".lfs");
}

std::string HubTestServer::endpoint() const {
  return "http://127.0.0.1:" + std::to_string(port_);
}

void HubTestServer::set_faults(HubFaults faults) {
  std::lock_guard<std::mutex> lock(mutex_);
  faults_ = std::move(faults);
}

std::vector<std::string> HubTestServer::requests() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return log_;
}

std::string HubTestServer::commit_of(const std::string& id) const {
  for (const auto& [key, repo] : repos_)
    if (repo.spec.id == id) return repo.commit;
  return "";
}

void HubTestServer::accept_loop() {
  while (!stopping_) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (stopping_) return;
      continue;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    connections_.emplace_back([this, fd] {
      serve(fd);
      ::close(fd);
    });
  }
}

void HubTestServer::serve(int fd) {
  std::string head;
  char buf[4096];
  while (head.find("\r\n\r\n") == std::string::npos && head.size() < 65536) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return;
    head.append(buf, static_cast<size_t>(n));
  }
  Request request;
  std::istringstream lines(head.substr(0, head.find("\r\n\r\n")));
  std::string line;
  std::getline(lines, line);
  std::istringstream first(line);
  first >> request.method >> request.path;
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(), ::tolower);
    size_t v = colon + 1;
    while (v < line.size() && line[v] == ' ') ++v;
    request.headers[name] = line.substr(v);
  }
  if (auto it = request.headers.find("content-length"); it != request.headers.end()) {
    const size_t length = std::stoul(it->second);
    if (request.header("expect") == "100-continue") {
      const std::string go = "HTTP/1.1 100 Continue\r\n\r\n";
      send_all(fd, go.data(), go.size());
    }
    request.body = head.substr(head.find("\r\n\r\n") + 4);
    while (request.body.size() < length) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return;
      request.body.append(buf, static_cast<size_t>(n));
    }
  }
  bool sent = false;
  const std::string response = answer(request, fd, sent);
  if (!sent) send_all(fd, response.data(), response.size());
}

// The recursive listing of /api/{type}s/{repo}/tree/{rev}: folders, then files with their
// blob ids and, for LFS files, the sha256.
std::string HubTestServer::tree_json(const Repo& repo) const {
  std::set<std::string> folders;
  for (const auto& [rel, f] : repo.files)
    for (size_t slash = rel.find('/'); slash != std::string::npos; slash = rel.find('/', slash + 1))
      folders.insert(rel.substr(0, slash));
  std::string out = "[";
  for (const std::string& d : folders)
    out += std::string(out.size() > 1 ? ", " : "") + "{\"type\": \"directory\", \"oid\": \"" +
           sha256_hex(d).substr(0, 40) + "\", \"size\": 0, \"path\": \"" + json_escape(d) + "\"}";
  for (const auto& [rel, f] : repo.files) {
    out += std::string(out.size() > 1 ? ", " : "") + "{\"type\": \"file\", \"oid\": \"" +
           f.sha256.substr(0, 40) + "\", \"size\": " + std::to_string(f.size) + ", \"path\": \"" +
           json_escape(rel) + "\"";
    if (f.lfs)
      out += ", \"lfs\": {\"oid\": \"" + f.sha256 + "\", \"size\": " + std::to_string(f.size) +
             ", \"pointerSize\": 134}";
    out += "}";
  }
  return out + "]";
}

std::string HubTestServer::answer(const Request& req, int fd, bool& sent) {
  auto reply = [&](int status, const std::string& reason, std::vector<std::string> headers,
                   const std::string& body, bool with_body = true) {
    std::string out = "HTTP/1.1 " + std::to_string(status) + " " + reason + "\r\n";
    headers.push_back("Content-Length: " + std::to_string(body.size()));
    headers.push_back("Connection: close");
    for (const std::string& h : headers) out += h + "\r\n";
    out += "\r\n";
    if (with_body && req.method != "HEAD") out += body;
    return out;
  };
  auto error = [&](int status, const std::string& code) {
    return reply(status, "Error", {"X-Error-Code: " + code, "Content-Type: application/json"},
                 "{\"error\": \"" + code + "\"}");
  };
  std::string range = req.header("range");
  int64_t range_start = 0;
  if (range.rfind("bytes=", 0) == 0) range_start = std::stoll(range.substr(6));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    log_.push_back(req.method + " " + req.path +
                   (range.empty() ? "" : " range=" + std::to_string(range_start)));
    if (faults_.status_times > 0) {
      --faults_.status_times;
      return reply(faults_.status, "Fault", {"Retry-After: 0"}, "injected fault");
    }
  }

  bool upload = false;
  if (std::string out = answer_upload(req, upload); upload) return out;

  // The bytes of an LFS object.
  if (req.path.rfind("/lfs/", 0) == 0) {
    auto it = lfs_.find(req.path.substr(5));
    if (it == lfs_.end()) return error(404, "EntryNotFound");
    const File& file = *it->second;
    std::string bytes = read_file(file.path);
    std::string rel;
    for (const auto& [key, repo] : repos_)
      for (const auto& [r, f] : repo.files)
        if (&f == &file) rel = r;
    bool drop = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (rel == faults_.corrupt_file && faults_.corrupt_times > 0) {
        --faults_.corrupt_times;
        bytes[bytes.size() / 2] ^= 0x5a;
      }
      if (rel == faults_.drop_file && faults_.drop_times > 0) {
        --faults_.drop_times;
        drop = true;
      }
    }
    range_start = std::min<int64_t>(range_start, static_cast<int64_t>(bytes.size()));
    const std::string body = bytes.substr(static_cast<size_t>(range_start));
    std::vector<std::string> headers = {"Content-Type: application/octet-stream",
                                        "Accept-Ranges: bytes"};
    int status = 200;
    if (!range.empty()) {
      status = 206;
      headers.push_back("Content-Range: bytes " + std::to_string(range_start) + "-" +
                        std::to_string(bytes.size() - 1) + "/" + std::to_string(bytes.size()));
    }
    std::string out = reply(status, status == 206 ? "Partial Content" : "OK", headers, body);
    if (drop) {  // headers promise the whole body; half of it comes, then the socket closes
      out.resize(out.size() - body.size() / 2);
      send_all(fd, out.data(), out.size());
      sent = true;
    }
    return out;
  }

  // Revision info, and the tree listing huggingface_hub's snapshot_download asks for.
  const std::string api_path = req.path.substr(0, req.path.find('?'));
  for (const char* prefix : {"/api/models/", "/api/datasets/"}) {
    if (api_path.rfind(prefix, 0) != 0) continue;
    const bool dataset = std::string(prefix) == "/api/datasets/";
    const std::string rest = api_path.substr(std::string(prefix).size());
    size_t cut = rest.find("/revision/");
    const bool tree = cut == std::string::npos;
    if (tree) cut = rest.find("/tree/");
    if (cut == std::string::npos) return error(404, "EntryNotFound");
    const std::string id = rest.substr(0, cut);
    if (auto moved = faults_.renamed.find(id); moved != faults_.renamed.end())
      return reply(307, "Temporary Redirect",
                   {"Location: " + std::string(prefix) + moved->second + rest.substr(cut)}, "");
    const std::string rev = url_decode(rest.substr(cut + (tree ? 6 : 10)));
    auto it = repos_.find((dataset ? "dataset:" : "model:") + id);
    if (it == repos_.end()) return error(404, "RepoNotFound");
    const Repo& repo = it->second;
    if (faults_.gated.count(id)) {
      const std::string auth = req.header("authorization");
      if (auth.empty()) return error(401, "GatedRepo");
      if (auth != "Bearer " + faults_.token) return error(403, "GatedRepo");
    }
    if (rev != repo.spec.revision && rev != repo.commit) return error(404, "RevisionNotFound");
    if (tree) return reply(200, "OK", {"Content-Type: application/json"}, tree_json(repo));
    std::string body = "{\"id\": \"" + json_escape(id) + "\", \"sha\": \"" + repo.commit +
                       "\", \"private\": false, \"siblings\": [";
    bool first = true;
    for (const auto& [rel, f] : repo.files) {
      body += std::string(first ? "" : ", ") + "{\"rfilename\": \"" + json_escape(rel) + "\"}";
      first = false;
    }
    body += "]}";
    return reply(200, "OK", {"Content-Type: application/json"}, body);
  }

  // resolve: metadata, redirects and small files.
  std::string rest = req.path.substr(1);
  bool dataset = false;
  if (rest.rfind("datasets/", 0) == 0) {
    dataset = true;
    rest = rest.substr(9);
  }
  const size_t cut = rest.find("/resolve/");
  if (cut == std::string::npos) return error(404, "EntryNotFound");
  const std::string id = rest.substr(0, cut);
  if (auto moved = faults_.renamed.find(id); moved != faults_.renamed.end())
    return reply(307, "Temporary Redirect",
                 {"Location: /" + std::string(dataset ? "datasets/" : "") + moved->second +
                  rest.substr(cut)},
                 "");
  const std::string tail = rest.substr(cut + 9);
  const size_t slash = tail.find('/');
  if (slash == std::string::npos) return error(404, "EntryNotFound");
  const std::string rev = url_decode(tail.substr(0, slash));
  const std::string path = url_decode(tail.substr(slash + 1));
  auto it = repos_.find((dataset ? "dataset:" : "model:") + id);
  if (it == repos_.end()) return error(404, "RepoNotFound");
  const Repo& repo = it->second;
  if (faults_.gated.count(id)) {
    const std::string auth = req.header("authorization");
    if (auth.empty()) return error(401, "GatedRepo");
    if (auth != "Bearer " + faults_.token) return error(403, "GatedRepo");
  }
  if (rev != repo.spec.revision && rev != repo.commit) return error(404, "RevisionNotFound");
  auto f = repo.files.find(path);
  if (f == repo.files.end()) {
    return reply(404, "Not Found", {"X-Error-Code: EntryNotFound", "X-Repo-Commit: " + repo.commit},
                 "");
  }
  const File& file = f->second;
  std::vector<std::string> headers = {"X-Repo-Commit: " + repo.commit,
                                      "ETag: \"" + file.sha256.substr(0, 40) + "\""};
  if (file.lfs) {
    headers.push_back("X-Linked-Etag: \"" + file.sha256 + "\"");
    const bool huge = path == faults_.huge_file;
    headers.push_back("X-Linked-Size: " +
                      (huge ? std::string("1152921504606846976") : std::to_string(file.size)));
    // Another host name for the same server, as the Hub redirects to its storage host
    // (huggingface_hub follows same-host redirects on HEAD, and would then miss X-Repo-Commit).
    headers.push_back("Location: http://localhost:" + std::to_string(port_) + "/lfs/" +
                      file.sha256);
    return reply(302, "Found", headers, "");
  }
  return reply(200, "OK", headers, read_file(file.path));
}

}  // namespace sft::test
