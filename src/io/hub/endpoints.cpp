#include "io/hub/endpoints.h"

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace sft::hub {

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t a = 0;
  while (a < s.size() && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  return s.substr(a);
}

std::string type_prefix(const RepoRef& repo) {
  return repo.type == HubRepoType::kModel ? "" : "datasets/";
}

}  // namespace

std::string hub_endpoint() {
  std::string e = trim(env("HF_ENDPOINT"));
  if (e.empty()) e = "https://huggingface.co";
  while (!e.empty() && e.back() == '/') e.pop_back();
  return e;
}

std::string url_quote(const std::string& text, bool keep_slash) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' ||
        (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string revision_info_url(const std::string& endpoint, const RepoRef& repo,
                              const std::string& revision) {
  return endpoint + "/api/" + (repo.type == HubRepoType::kModel ? "models/" : "datasets/") +
         repo.id + "/revision/" + url_quote(revision, false);
}

std::string resolve_url(const std::string& endpoint, const RepoRef& repo,
                        const std::string& revision, const std::string& path) {
  return endpoint + "/" + type_prefix(repo) + repo.id + "/resolve/" + url_quote(revision, false) +
         "/" + url_quote(path, true);
}

std::string repo_page_url(const std::string& endpoint, const RepoRef& repo) {
  return endpoint + "/" + type_prefix(repo) + repo.id;
}

std::string repo_folder_name(const RepoRef& repo) {
  std::string name = repo.type == HubRepoType::kModel ? "models--" : "datasets--";
  for (char c : repo.id) {
    if (c == '/') {
      name += "--";
    } else {
      name += c;
    }
  }
  return name;
}

std::optional<std::string> hub_token() {
  for (const char* name : {"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"}) {
    std::string t = trim(env(name));
    if (!t.empty()) return t;
  }
  std::string path = env("HF_TOKEN_PATH");
  if (path.empty()) {
    std::string home = env("HF_HOME");
    if (home.empty()) {
      std::string xdg = env("XDG_CACHE_HOME");
      home = xdg.empty() ? env("HOME") + "/.cache/huggingface" : xdg + "/huggingface";
    }
    path = home + "/token";
  }
  std::ifstream in(path);
  std::string token;
  if (in && std::getline(in, token)) {
    token = trim(token);
    if (!token.empty()) return token;
  }
  return std::nullopt;
}

bool hub_offline() {
  std::string v = trim(env("HF_HUB_OFFLINE"));
  for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return v == "1" || v == "true" || v == "yes" || v == "on";
}

}  // namespace sft::hub
