#include "io/hub/http.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <mutex>

#include "core/error.h"

namespace sft::hub {

namespace {

void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
      fail("hub", "libcurl failed to initialise (hint: check the libcurl4 installation)");
  });
}

struct Transfer {
  HttpResponse* response;
  const BodySink* sink;
  bool aborted_by_sink = false;
};

std::string trim(std::string_view s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return std::string(s.substr(a, b - a));
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::string_view line(data, size * count);
  if (line.rfind("HTTP/", 0) == 0) {
    t->response->headers.clear();  // a new answer in a redirect chain
    t->response->body_bytes = 0;
  } else if (size_t colon = line.find(':'); colon != std::string_view::npos) {
    std::string name = trim(line.substr(0, colon));
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    t->response->headers[name] = trim(line.substr(colon + 1));
  }
  return size * count;
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * count;
  t->response->body_bytes += static_cast<int64_t>(n);
  if (t->sink != nullptr && *t->sink) {
    if (!(*t->sink)(0, std::string_view(data, n))) {
      t->aborted_by_sink = true;
      return 0;  // makes curl fail the transfer with CURLE_WRITE_ERROR
    }
  } else {
    t->response->body.append(data, n);
  }
  return n;
}

size_t on_read(char* buffer, size_t size, size_t count, void* user) {
  return std::fread(buffer, size, count, static_cast<std::FILE*>(user));
}

}  // namespace

std::string HttpResponse::header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? std::string() : it->second;
}

std::string url_origin(const std::string& url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  const size_t path = url.find('/', scheme + 3);
  return path == std::string::npos ? url : url.substr(0, path);
}

HttpResponse http_send(const HttpRequest& request, const BodySink& sink) {
  init_curl_once();
  HttpResponse response;
  CURL* curl = curl_easy_init();
  if (curl == nullptr) fail("hub", "libcurl could not create a handle (out of memory?)");
  Transfer transfer{&response, &sink};
  curl_slist* headers = nullptr;
  for (const std::string& h : request.headers) headers = curl_slist_append(headers, h.c_str());
  // The Hub's sizes and checksums are of the stored bytes: no transparent compression.
  headers = curl_slist_append(headers, "Accept-Encoding: identity");
  const std::string range = std::to_string(request.range_start) + "-";  // "N-": from N to the end

  curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "sft/" SFT_VERSION);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // safe from worker threads
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, request.connect_timeout_s);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, request.low_speed_timeout_s);
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, request.follow_redirects ? 1L : 0L);
  curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
  if (request.method == "HEAD") {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else if (request.method == "POST") {
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(request.body.size()));
  }
  std::FILE* upload = nullptr;
  if (request.method == "PUT") {
    upload = std::fopen(request.upload_path.c_str(), "rb");
    if (upload == nullptr) {
      curl_slist_free_all(headers);
      curl_easy_cleanup(curl);
      fail("hub", "cannot read " + request.upload_path + " to upload it: " + errno_text(errno));
    }
    std::fseek(upload, 0, SEEK_END);
    const long size = std::ftell(upload);
    std::fseek(upload, 0, SEEK_SET);
    curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(curl, CURLOPT_READFUNCTION, on_read);
    curl_easy_setopt(curl, CURLOPT_READDATA, upload);
    curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(size));
  }
  if (request.range_start >= 0) curl_easy_setopt(curl, CURLOPT_RANGE, range.c_str());

  // Error bodies are small and wanted in memory (the Hub explains itself there).
  BodySink guarded = [&](long, std::string_view bytes) {
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 300 || !sink) {
      response.body.append(bytes);
      return true;
    }
    return sink(status, bytes);
  };
  transfer.sink = &guarded;

  const CURLcode rc = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
  char* effective = nullptr;
  curl_easy_getinfo(curl, CURLINFO_EFFECTIVE_URL, &effective);
  if (effective != nullptr) response.effective_url = effective;
  if (rc != CURLE_OK) {
    response.transport_error =
        transfer.aborted_by_sink ? "stopped by the receiver" : std::string(curl_easy_strerror(rc));
    response.status = 0;
  }
  if (upload != nullptr) std::fclose(upload);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  return response;
}

}  // namespace sft::hub
