// One HTTP request over libcurl's easy interface, the only place sft talks to the network.
//
// A request either collects the body in memory (API calls) or streams it to a sink that may
// stop the transfer by returning false (file downloads). Redirects are followed only when
// asked: the Hub's HEAD on a resolve URL answers 302 to the LFS storage, and the client reads
// that Location rather than following it. A failed transfer (refused, dropped mid-body, timed
// out) comes back with status 0 and `transport_error` set; HTTP errors come back as statuses,
// never as exceptions, so the caller decides what is worth a retry.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace sft::hub {

struct HttpRequest {
  std::string method = "GET";  // GET, HEAD, POST, PUT
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  std::string body;                  // sent with POST
  std::string upload_path;           // PUT: the file whose bytes are the body
  bool follow_redirects = false;
  int64_t range_start = -1;  // >= 0: "Range: bytes=N-"
  long connect_timeout_s = 10;
  long low_speed_timeout_s = 30;  // abort when under 1 byte/s for this long
};

struct HttpResponse {
  long status = 0;                             // 0 = no HTTP answer (see transport_error)
  std::map<std::string, std::string> headers;  // of the final answer, names lower-cased
  std::string body;                            // unless a sink took it
  std::string transport_error;                 // curl's message when the transfer failed
  std::string effective_url;
  int64_t body_bytes = 0;  // bytes received for the final answer

  std::string header(const std::string& lower_name) const;
};

// Receives the body bytes of a 2xx answer with its status (206 for a range, 200 when the
// server ignored the range); return false to abort the transfer.
using BodySink = std::function<bool(long status, std::string_view bytes)>;

HttpResponse http_send(const HttpRequest& request, const BodySink& sink = nullptr);

// "https://host:port/a/b" → "https://host:port" (scheme and authority), for same-host checks.
std::string url_origin(const std::string& url);

}  // namespace sft::hub
