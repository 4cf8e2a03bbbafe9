#include "io/hub/plan.h"

#include <algorithm>
#include <set>

#include "core/error.h"
#include "io/json.h"

namespace sft::hub {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool in_folder_named(const std::string& path, const std::string& folder) {
  size_t start = 0;
  for (size_t slash = path.find('/'); slash != std::string::npos;
       start = slash + 1, slash = path.find('/', start)) {
    if (path.compare(start, slash - start, folder) == 0) return true;
  }
  return false;
}

}  // namespace

RevisionInfo fetch_revision_info(const HubSession& session, const RequestContext& context) {
  HttpRequest request;
  request.url = revision_info_url(session.endpoint, context.repo, context.revision);
  request.headers = session.auth_headers;
  request.follow_redirects = true;  // renamed repos answer with a redirect
  const HttpResponse r = send_with_retries(session, request);
  if (r.status != 200) fail_request(context, request.url, r);
  const Json info = parse_json_strict(r.body, "hub", request.url);
  RevisionInfo out;
  if (info.is_object() && info.contains("sha") && info["sha"].is_string())
    out.commit = info["sha"].get<std::string>();
  if (info.is_object() && info.contains("siblings") && info["siblings"].is_array()) {
    for (const Json& s : info["siblings"])
      if (s.is_object() && s.contains("rfilename") && s["rfilename"].is_string())
        out.files.push_back(s["rfilename"].get<std::string>());
  }
  if (!is_commit_hash(out.commit))
    fail("hub", request.url + " gave no commit (\"sha\") for revision '" + context.revision +
                    "' (hint: HF_ENDPOINT=" + session.endpoint +
                    " must point to a Hub or a mirror of its API)");
  std::sort(out.files.begin(), out.files.end());
  return out;
}

std::vector<std::string> plan_model_files(const std::vector<std::string>& files) {
  static const std::set<std::string> kNamed = {
      "config.json",           "generation_config.json",      "tokenizer.json",
      "tokenizer_config.json", "special_tokens_map.json",     "chat_template.jinja",
      "chat_template.json",    "model.safetensors.index.json"};
  std::vector<std::string> out;
  bool weights = false;
  for (const std::string& f : files) {
    const bool top = f.find('/') == std::string::npos;
    const bool safetensors = top && ends_with(f, ".safetensors");
    weights |= safetensors;
    if (kNamed.count(f) || safetensors) out.push_back(f);
  }
  if (std::find(files.begin(), files.end(), "config.json") == files.end())
    fail("hub",
         "the repo has no config.json, so it is not a transformers model (hint: pass a "
         "model repo such as Qwen/Qwen3-0.6B)");
  if (!weights)
    fail("hub",
         "the repo has no .safetensors weights; sft reads only safetensors (hint: pick "
         "a revision or a repo with model.safetensors, or convert the .bin weights with "
         "transformers' save_pretrained(safe_serialization=True))");
  return out;
}

bool is_dataset_data_file(const std::string& path) {
  const std::string p = lower(path);
  return ends_with(p, ".parquet") || ends_with(p, ".jsonl") || ends_with(p, ".json") ||
         ends_with(p, ".ndjson");
}

std::vector<std::string> plan_dataset_files(const std::vector<std::string>& files,
                                            const std::string& config) {
  std::vector<std::string> data;
  for (const std::string& f : files)
    if (is_dataset_data_file(f) && f.rfind('.', 0) != 0) data.push_back(f);
  std::string scope = config;
  if (scope.empty() && std::any_of(data.begin(), data.end(), [](const std::string& f) {
        return f.rfind("default/", 0) == 0;
      }))
    scope = "default";
  std::vector<std::string> out;
  for (const std::string& f : data)
    if (scope.empty() || in_folder_named(f, scope)) out.push_back(f);
  if (out.empty() && !config.empty()) out = data;  // configs laid out by README only
  if (!out.empty() && std::find(files.begin(), files.end(), "README.md") != files.end())
    out.push_back("README.md");
  return out;
}

}  // namespace sft::hub
