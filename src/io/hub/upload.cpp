#include "io/hub/upload.h"

#include <openssl/evp.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/log.h"
#include "io/json.h"

namespace sft::hub {

namespace fs = std::filesystem;

namespace {

constexpr int64_t kLfsThreshold = 10 * 1024 * 1024;

bool stored_in_lfs(const std::string& path, int64_t size) {
  const std::string ext = fs::path(path).extension().string();
  for (const char* e : {".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".parquet", ".arrow",
                        ".gguf", ".h5", ".msgpack", ".onnx", ".zip", ".gz"})
    if (ext == e) return true;
  return size >= kLfsThreshold;
}

std::string base64_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  const std::string bytes = s.str();
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::string repo_url_prefix(const std::string& endpoint, const RepoRef& repo) {
  return endpoint + (repo.type == HubRepoType::kModel ? "/" : "/datasets/") + repo.id;
}

HttpRequest json_post(const HubSession& s, const std::string& url, const Json& body,
                      const std::string& content_type = "application/json") {
  HttpRequest r;
  r.method = "POST";
  r.url = url;
  r.headers = s.auth_headers;
  r.headers.push_back("Content-Type: " + content_type);
  r.body = body.dump();
  return r;
}

void create_repo(const HubSession& s, const RequestContext& c, bool private_repo) {
  const size_t slash = c.repo.id.find('/');
  Json body = {{"type", c.repo.type == HubRepoType::kModel ? "model" : "dataset"},
               {"name", slash == std::string::npos ? c.repo.id : c.repo.id.substr(slash + 1)},
               {"private", private_repo}};
  if (slash != std::string::npos) body["organization"] = c.repo.id.substr(0, slash);
  const std::string url = s.endpoint + "/api/repos/create";
  const HttpResponse r = send_with_retries(s, json_post(s, url, body));
  if (r.status == 409) return;  // exists already: push into it
  if (r.status < 200 || r.status >= 300) fail_request(c, url, r);
}

struct LocalFile {
  std::string path, disk_path, sha256;
  int64_t size = 0;
  bool lfs = false;
};

// Uploads the LFS objects the Hub lacks; returns how many were sent.
size_t upload_lfs(const HubSession& s, const RequestContext& c, const std::vector<LocalFile>& files,
                  const std::string& revision) {
  Json objects = Json::array();
  for (const LocalFile& f : files)
    if (f.lfs) objects.push_back({{"oid", f.sha256}, {"size", f.size}});
  if (objects.empty()) return 0;
  const Json body = {{"operation", "upload"},
                     {"transfers", {"basic"}},
                     {"objects", objects},
                     {"hash_algo", "sha256"},
                     {"ref", {{"name", "refs/heads/" + revision}}}};
  const std::string url = repo_url_prefix(s.endpoint, c.repo) + ".git/info/lfs/objects/batch";
  HttpRequest request = json_post(s, url, body, "application/vnd.git-lfs+json");
  request.headers.push_back("Accept: application/vnd.git-lfs+json");
  const HttpResponse r = send_with_retries(s, request);
  if (r.status != 200) fail_request(c, url, r);
  const Json answer = parse_json_strict(r.body, "hub", url);
  size_t sent = 0;
  for (const Json& o : answer.value("objects", Json::array())) {
    if (o.contains("error"))
      fail("hub", "the Hub refused LFS object " + o.value("oid", std::string()) + " of '" +
                      c.repo.id + "': " + o["error"].dump() +
                      " (hint: check the token's write access)");
    if (!o.contains("actions") || !o["actions"].contains("upload")) continue;  // already there
    const std::string oid = o.value("oid", std::string());
    auto f = std::find_if(files.begin(), files.end(),
                          [&](const LocalFile& x) { return x.lfs && x.sha256 == oid; });
    if (f == files.end()) fail("hub", url + " asked for an object sft did not offer: " + oid);
    const Json& upload = o["actions"]["upload"];
    HttpRequest put;
    put.method = "PUT";
    put.url = upload.value("href", std::string());
    put.upload_path = f->disk_path;
    const Json upload_headers = upload.value("header", Json::object());  // outlives the loop
    for (const auto& [k, v] : upload_headers.items())
      if (v.is_string()) put.headers.push_back(k + ": " + v.get<std::string>());
    RequestContext fc = c;
    fc.file = f->path;
    const HttpResponse pr = send_with_retries(s, put);
    if (pr.status < 200 || pr.status >= 300) fail_request(fc, put.url, pr);
    if (o["actions"].contains("verify")) {
      const Json& verify = o["actions"]["verify"];
      HttpRequest v = json_post(s, verify.value("href", std::string()),
                                {{"oid", oid}, {"size", f->size}}, "application/vnd.git-lfs+json");
      const HttpResponse vr = send_with_retries(s, v);
      if (vr.status < 200 || vr.status >= 300) fail_request(fc, v.url, vr);
    }
    ++sent;
  }
  return sent;
}

// The user a token belongs to (GET /api/whoami-v2), for a repo id given without namespace.
std::string token_user(const HubSession& s) {
  HttpRequest r;
  r.url = s.endpoint + "/api/whoami-v2";
  r.headers = s.auth_headers;
  const HttpResponse answer = send_with_retries(s, r);
  std::string name;
  if (answer.status == 200) name = parse_json_strict(answer.body, "hub", r.url).value("name", "");
  if (name.empty())
    fail("hub", r.url + " did not say whose token this is (HTTP " + std::to_string(answer.status) +
                    ") (hint: pass --hub_model_id ORG/NAME, and check HF_TOKEN / --hub_token)");
  return name;
}

}  // namespace

std::vector<std::string> files_to_publish(const std::string& folder) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(folder, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const bool skip = name.rfind('.', 0) == 0 ||
                      (it.depth() == 0 && it->is_directory() && name.rfind("checkpoint-", 0) == 0);
    if (skip) {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file())
      out.push_back(it->path().lexically_relative(folder).generic_string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> checkpoint_model_files(const std::string& checkpoint) {
  std::vector<std::string> out;
  for (const std::string& f : files_to_publish(checkpoint)) {
    const bool weights = f.ends_with(".safetensors") && f != "optimizer.safetensors";
    const bool named = f == "config.json" || f == "generation_config.json" ||
                       f == "model.safetensors.index.json" || f.rfind("tokenizer", 0) == 0 ||
                       f == "special_tokens_map.json" || f == "chat_template.jinja" ||
                       f == "README.md";
    if (weights || named) out.push_back(f);
  }
  return out;
}

UploadResult push_folder(const std::string& folder, const UploadOptions& options) {
  HubSession s;
  s.endpoint = hub_endpoint();
  s.retry = options.retry;
  const std::optional<std::string> token = options.token ? options.token : hub_token();
  if (!token)
    fail("hub",
         "--push_to_hub needs a token with write access (hint: set HF_TOKEN=hf_..., pass "
         "--hub_token, or run `huggingface-cli login`)");
  s.auth_headers.push_back("Authorization: Bearer " + *token);
  std::string repo_id = options.repo_id;
  if (repo_id.find('/') == std::string::npos) repo_id = token_user(s) + "/" + repo_id;
  const RequestContext c{{HubRepoType::kModel, repo_id}, options.revision, "", "", true};

  std::vector<LocalFile> files;
  for (const std::string& rel : options.files.empty() ? files_to_publish(folder) : options.files) {
    LocalFile f;
    f.path = rel;
    f.disk_path = (fs::path(folder) / rel).string();
    f.size = static_cast<int64_t>(fs::file_size(f.disk_path));
    f.lfs = stored_in_lfs(rel, f.size);
    if (f.lfs) f.sha256 = sha256_file(f.disk_path);
    files.push_back(std::move(f));
  }
  if (files.empty()) fail("hub", "nothing to push: " + folder + " has no files to publish");

  create_repo(s, c, options.private_repo);
  UploadResult result;
  result.lfs_uploaded = upload_lfs(s, c, files, options.revision);

  std::string body =
      Json{{"key", "header"}, {"value", {{"summary", options.commit_message}, {"description", ""}}}}
          .dump() +
      "\n";
  for (const LocalFile& f : files) {
    Json line;
    if (f.lfs) {
      line = {
          {"key", "lfsFile"},
          {"value", {{"path", f.path}, {"algo", "sha256"}, {"oid", f.sha256}, {"size", f.size}}}};
      ++result.lfs_files;
    } else {
      line = {{"key", "file"},
              {"value",
               {{"path", f.path}, {"content", base64_file(f.disk_path)}, {"encoding", "base64"}}}};
    }
    body += line.dump() + "\n";
  }
  result.files = files.size();
  HttpRequest commit;
  commit.method = "POST";
  commit.url =
      s.endpoint + "/api/models/" + repo_id + "/commit/" + url_quote(options.revision, false);
  commit.headers = s.auth_headers;
  commit.headers.push_back("Content-Type: application/x-ndjson");
  commit.body = std::move(body);
  const HttpResponse r = send_with_retries(s, commit);
  if (r.status < 200 || r.status >= 300) fail_request(c, commit.url, r);
  const Json answer = parse_json_strict(r.body, "hub", commit.url);
  result.commit = answer.value("commitOid", std::string());
  log_info("[hub] pushed ", result.files, " files (", result.lfs_files, " in LFS, ",
           result.lfs_uploaded, " uploaded) of ", folder, " to ", repo_page_url(s.endpoint, c.repo),
           " at commit ", result.commit);
  return result;
}

}  // namespace sft::hub
