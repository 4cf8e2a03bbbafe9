#include "io/hub/errors.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <vector>

#include "core/edit_distance.h"
#include "core/error.h"
#include "io/hub/cache_repo.h"

namespace sft::hub {

namespace fs = std::filesystem;

namespace {

std::string not_found_message(const RequestContext& c, const std::string& code) {
  const std::string what = std::string(c.repo.kind()) + " '" + c.repo.id + "'";
  if (code == "RevisionNotFound") {
    std::string known = cached_revisions(c.cache_dir, c.repo);
    return "revision '" + c.revision + "' of " + what + " not found on the Hub (hint: check " +
           (c.repo.type == HubRepoType::kModel ? "--model_revision" : "the dataset revision") +
           ": a branch, tag or full commit" +
           (known.empty() ? std::string() : "; cached revisions: " + known) + ")";
  }
  if (code == "EntryNotFound") {
    return "file '" + c.file + "' not found in " + what + " at revision '" + c.revision +
           "' (hint: the repo's file list named it; retry, or report a broken repo)";
  }
  std::string closest = closest_cached_repo(c.cache_dir, c.repo);
  return what + " not found on the Hub" +
         (c.token_sent ? "" : ", or it is private and no token was sent") +
         " (hint: check the spelling" +
         (closest.empty() ? std::string() : "; the closest in the cache is '" + closest + "'") +
         (c.token_sent ? "" : "; set HF_TOKEN for a private repo") + ")";
}

}  // namespace

std::string closest_cached_repo(const std::string& cache_dir, const RepoRef& repo) {
  const std::string prefix = repo.type == HubRepoType::kModel ? "models--" : "datasets--";
  std::error_code ec;
  std::string best;
  size_t best_distance = std::max<size_t>(3, repo.id.size() / 3) + 1;
  for (const auto& entry : fs::directory_iterator(cache_dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    name = name.substr(prefix.size());
    const size_t sep = name.find("--");
    if (sep != std::string::npos) name = name.substr(0, sep) + "/" + name.substr(sep + 2);
    const size_t d = edit_distance(name, repo.id, /*case_blind=*/true);
    if (d < best_distance) {
      best_distance = d;
      best = name;
    }
  }
  return best;
}

std::string cached_revisions(const std::string& cache_dir, const RepoRef& repo) {
  const fs::path refs = CacheRepo(cache_dir, repo).root() / "refs";
  std::vector<std::string> names;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(refs, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file()) names.push_back(it->path().lexically_relative(refs).string());
  }
  std::sort(names.begin(), names.end());
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

void fail_request(const RequestContext& c, const std::string& url, const HttpResponse& r) {
  const std::string what = std::string(c.repo.kind()) + " '" + c.repo.id + "'";
  const std::string code = r.header("x-error-code");
  if (r.status == 0) {
    fail("hub", "cannot download " + what + ": no answer from " + url + " (" + r.transport_error +
                    ") (hint: check the network, or HF_ENDPOINT for a mirror; with "
                    "HF_HUB_OFFLINE=1 sft uses only the cache at " +
                    c.cache_dir + ")");
  }
  if (r.status == 404 || code == "RepoNotFound" || code == "RevisionNotFound" ||
      code == "EntryNotFound") {
    fail("hub", not_found_message(c, code));
  }
  if (r.status == 401 || r.status == 403) {
    const std::string page = repo_page_url(hub_endpoint(), c.repo);
    const bool gated = code == "GatedRepo" || r.status == 403;
    fail("hub",
         what + " refused access (HTTP " + std::to_string(r.status) + "): it is " +
             (gated ? "gated" : "gated or private") + " and " +
             (c.token_sent ? "the token sent is not allowed to read it" : "no token was sent") +
             " (hint: " + (gated ? "accept its terms at " + page + ", then " : "") +
             "set HF_TOKEN=hf_... or run `huggingface-cli login` with an account that has "
             "access)");
  }
  std::string detail = r.header("x-error-message");
  if (detail.empty()) detail = r.body.substr(0, 200);
  fail("hub", "cannot download " + what + ": " + url + " answered HTTP " +
                  std::to_string(r.status) + (detail.empty() ? "" : " (" + detail + ")") +
                  " (hint: retry later; with HF_HUB_OFFLINE=1 sft uses only the cache at " +
                  c.cache_dir + ")");
}

}  // namespace sft::hub
