// Fingerprint (token_cache.h): the cache key's two FNV-style lanes over named,
// length-prefixed fields, files by identity or by contents.
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "data/token_cache.h"
#include "io/mapped_file.h"

namespace sft::data {

namespace {

uint64_t lane_step(uint64_t h, uint8_t byte, uint64_t prime) {
  return (h ^ byte) * prime;
}

}  // namespace

void Fingerprint::mix(std::string_view bytes) {
  constexpr uint64_t kPrimeA = 0x100000001b3ull;  // FNV-1a 64
  constexpr uint64_t kPrimeB = 0x9e3779b97f4a7c15ull | 1;
  uint64_t a = a_, b = b_;
  for (unsigned char c : bytes) {
    a = lane_step(a, c, kPrimeA);
    b = lane_step(b, c, kPrimeB);
    b ^= b >> 29;  // extra diffusion so lane b is not a plain FNV with another prime
  }
  a_ = a, b_ = b;
}

void Fingerprint::add(std::string_view name, std::string_view value) {
  auto length = [&](uint64_t n) {
    char buf[8];
    std::memcpy(buf, &n, 8);
    mix({buf, 8});
  };
  length(name.size());
  mix(name);
  length(value.size());
  mix(value);
}

void Fingerprint::add_int(std::string_view name, int64_t value) {
  add(name, std::to_string(value));
}

void Fingerprint::add_file_identity(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    fail_in_file("cache", {path, ""}, "cannot stat: " + errno_text(errno), "check the path");
  std::string identity = std::filesystem::absolute(path).lexically_normal().string();
  identity += "|" + std::to_string(st.st_size) + "|" + std::to_string(st.st_mtim.tv_sec) + "." +
              std::to_string(st.st_mtim.tv_nsec);
  add("file", identity);
}

void Fingerprint::add_file_contents(std::string_view name, const std::string& path) {
  if (!std::filesystem::exists(path)) {
    add(name, "<absent>");
    return;
  }
  auto file = MappedFile::open(path);
  auto bytes = file->bytes();
  add(name, {reinterpret_cast<const char*>(bytes.data()), bytes.size()});
}

std::string Fingerprint::hex() const {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", (unsigned long long)a_, (unsigned long long)b_);
  return buf;
}

}  // namespace sft::data
