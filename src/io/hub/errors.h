// The Hub's refusals turned into messages a user can act on.
//
//   401 / 403   gated or private: says whether a token was sent and how to give one
//   404         names the repo, revision or file the Hub did not find (its X-Error-Code
//               header tells which) and the closest repo, or the revisions, in the local cache
//   no answer   names the endpoint and curl's reason, and how to work from the cache only
// Every message starts "[hub] " and ends with a hint, like the rest of sft's errors.
#pragma once

#include <string>

#include "io/hub/endpoints.h"
#include "io/hub/http.h"

namespace sft::hub {

struct RequestContext {
  RepoRef repo;
  std::string revision;
  std::string file;  // empty for repo-level requests
  std::string cache_dir;
  bool token_sent = false;
};

// Throws sft::Error describing `response` (an HTTP error status or a transport failure).
[[noreturn]] void fail_request(const RequestContext& context, const std::string& url,
                               const HttpResponse& response);

// The cached repo of the same type whose id is closest to `id` (edit distance, case-blind),
// or "" when none is close.
std::string closest_cached_repo(const std::string& cache_dir, const RepoRef& repo);
// The revisions refs/ knows for a cached repo, comma-separated ("" when none).
std::string cached_revisions(const std::string& cache_dir, const RepoRef& repo);

}  // namespace sft::hub
