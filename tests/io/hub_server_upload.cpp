// The push side of the tests' Hub (hub_server.h): create, whoami, LFS batch/PUT/verify and
// the ndjson commit, as io/hub/upload.h sends them. Committed files are written into the
// repo's folder and the repo is indexed again, so they download like the others.
#include <openssl/evp.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "io/hub/download_file.h"
#include "io/hub_server.h"
#include "io/json.h"

namespace sft::test {

namespace fs = std::filesystem;

namespace {

std::string plain_reply(int status, const std::vector<std::string>& headers,
                        const std::string& body) {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " Answer\r\n";
  for (const std::string& h : headers) out += h + "\r\n";
  out += "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
  return out + body;
}

std::string base64_decode(const std::string& text) {
  std::string out(text.size() / 4 * 3 + 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0) return "";
  size_t size = static_cast<size_t>(n);
  for (size_t i = text.size(); i > 0 && text[i - 1] == '='; --i) --size;  // padding
  out.resize(size);
  return out;
}

}  // namespace

// The push side of the Hub (upload.h's calls); `handled` = false for other requests.
std::string HubTestServer::answer_upload(const Request& req, bool& handled) {
  handled = true;
  std::lock_guard<std::mutex> lock(mutex_);
  const bool lfs_path =
      req.path.rfind("/lfs-upload/", 0) == 0 || req.path.rfind("/lfs-verify/", 0) == 0;
  if (req.path == "/api/whoami-v2" && !uploads_dir_.empty()) {
    if (req.header("authorization") != "Bearer " + faults_.token) return plain_reply(401, {}, "");
    return plain_reply(200, {"Content-Type: application/json"}, "{\"name\": \"me\"}");
  }
  const bool api =
      req.method == "POST" &&
      (req.path == "/api/repos/create" ||
       req.path.find(".git/info/lfs/objects/batch") != std::string::npos ||
       (req.path.rfind("/api/", 0) == 0 && req.path.find("/commit/") != std::string::npos));
  if (uploads_dir_.empty() || (!lfs_path && !api)) {
    handled = false;
    return "";
  }
  const fs::path store = fs::path(uploads_dir_) / ".lfs";
  if (req.path.rfind("/lfs-upload/", 0) == 0 && req.method == "PUT") {
    const std::string oid = req.path.substr(12);
    std::ofstream(store / oid, std::ios::binary) << req.body;
    if (hub::sha256_file((store / oid).string()) != oid) {
      fs::remove(store / oid);
      return plain_reply(400, {}, "checksum mismatch");
    }
    return plain_reply(200, {}, "");
  }
  if (req.path.rfind("/lfs-verify/", 0) == 0)
    return plain_reply(fs::exists(store / req.path.substr(12)) ? 200 : 404, {}, "");
  if (req.header("authorization") != "Bearer " + faults_.token)
    return plain_reply(401, {"X-Error-Code: Unauthorized"}, "{\"error\": \"Invalid credentials\"}");
  const Json body = req.path.find("/commit/") == std::string::npos ? Json::parse(req.body) : Json();
  if (req.path == "/api/repos/create") {
    const std::string id =
        body.value("organization", std::string()) + "/" + body.value("name", std::string());
    const std::string key =
        (body.value("type", std::string("model")) == "dataset" ? "dataset:" : "model:") + id;
    if (repos_.count(key))
      return plain_reply(409, {}, "{\"error\": \"You already created this repo\"}");
    const fs::path folder = fs::path(uploads_dir_) / id;
    fs::create_directories(folder);
    repos_[key] = index_repo({key.rfind("dataset:", 0) == 0, id, folder.string(), "main"});
    reindex_lfs();
    return plain_reply(200, {"Content-Type: application/json"},
                       "{\"url\": \"" + endpoint() + "/" + id + "\"}");
  }
  if (req.path.find(".git/info/lfs/objects/batch") != std::string::npos) {
    Json objects = Json::array();
    for (const Json& o : body.value("objects", Json::array())) {
      const std::string oid = o.value("oid", std::string());
      Json answer = {{"oid", oid}, {"size", o.value("size", 0)}};
      if (!fs::exists(store / oid) && !lfs_.count(oid))
        answer["actions"] = {{"upload", {{"href", endpoint() + "/lfs-upload/" + oid}}},
                             {"verify", {{"href", endpoint() + "/lfs-verify/" + oid}}}};
      objects.push_back(answer);
    }
    return plain_reply(200, {"Content-Type: application/vnd.git-lfs+json"},
                       Json{{"transfer", "basic"}, {"objects", objects}}.dump());
  }
  // Commit: /api/models/{id}/commit/{rev}
  const size_t cut = req.path.find("/commit/");
  const std::string id =
      req.path.substr(std::string("/api/models/").size(), cut - std::string("/api/models/").size());
  auto it = repos_.find("model:" + id);
  if (it == repos_.end()) return plain_reply(404, {"X-Error-Code: RepoNotFound"}, "");
  const fs::path folder = it->second.spec.folder;
  std::istringstream lines(req.body);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    const Json entry = Json::parse(line);
    const Json& v = entry["value"];
    if (entry["key"] == "header") continue;
    const fs::path target = folder / v.value("path", std::string());
    fs::create_directories(target.parent_path());
    if (entry["key"] == "file") {
      std::ofstream(target, std::ios::binary) << base64_decode(v.value("content", std::string()));
    } else if (entry["key"] == "lfsFile") {
      const std::string oid = v.value("oid", std::string());
      if (fs::exists(store / oid)) {
        fs::copy_file(store / oid, target, fs::copy_options::overwrite_existing);
      } else if (lfs_.count(oid)) {
        fs::copy_file(lfs_[oid]->path, target, fs::copy_options::overwrite_existing);
      } else {
        return plain_reply(400, {}, "{\"error\": \"LFS object " + oid + " was never uploaded\"}");
      }
    }
  }
  it->second = index_repo(it->second.spec);
  reindex_lfs();
  return plain_reply(200, {"Content-Type: application/json"},
                     "{\"commitOid\": \"" + it->second.commit + "\", \"commitUrl\": \"" +
                         endpoint() + "/" + id + "/commit/" + it->second.commit + "\"}");
}

}  // namespace sft::test
