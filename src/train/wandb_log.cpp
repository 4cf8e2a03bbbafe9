#include "train/wandb_log.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>

#include "core/error.h"

namespace sft {

namespace {

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

uint32_t chunk_crc(uint8_t type, std::string_view chunk) {
  uLong crc = crc32(0L, &type, 1);
  // zlib takes the length as uInt; chunks are below 32 KiB.
  crc = crc32(crc, reinterpret_cast<const Bytef*>(chunk.data()), static_cast<uInt>(chunk.size()));
  return static_cast<uint32_t>(crc);
}

}  // namespace

std::string wandb_log_header() {
  return std::string(":W&B\xE1\xBE\x00", 7);
}

std::string wandb_frame_record(std::string_view payload, uint64_t file_size) {
  std::string out;
  size_t pos = static_cast<size_t>(file_size % kWandbBlockSize);
  bool first = true;
  while (true) {
    if (kWandbBlockSize - pos < kWandbChunkHeader) {
      out.append(kWandbBlockSize - pos, '\0');
      pos = 0;
    }
    const size_t room = kWandbBlockSize - pos - kWandbChunkHeader;
    const size_t n = std::min(room, payload.size());
    const bool last = n == payload.size();
    // A record with bytes left when a block is exactly full still gets a (possibly empty)
    // FIRST/MIDDLE chunk there, as LevelDB's writer does.
    const uint8_t type = first && last ? 1 : first ? 2 : last ? 4 : 3;
    const std::string_view chunk = payload.substr(0, n);
    put_u32(out, chunk_crc(type, chunk));
    out.push_back(static_cast<char>(n & 0xFF));
    out.push_back(static_cast<char>(n >> 8));
    out.push_back(static_cast<char>(type));
    out.append(chunk);
    pos += kWandbChunkHeader + n;
    payload.remove_prefix(n);
    first = false;
    if (last) return out;
  }
}

WandbLogFile::WandbLogFile(const std::string& path) : path_(path) {
  file_ = std::fopen(path.c_str(), "wb");
  if (!file_)
    fail("wandb", "cannot create " + path + ": " + errno_text(errno) +
                      " (hint: set WANDB_DIR to a writable folder)");
  write(wandb_log_header());
}

WandbLogFile::~WandbLogFile() {
  if (file_) std::fclose(file_);
}

void WandbLogFile::append(std::string_view record) {
  write(wandb_frame_record(record, size_));
}

void WandbLogFile::write(const std::string& bytes) {
  if (std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size() || std::fflush(file_) != 0)
    fail("wandb", "cannot write " + path_ + ": " + errno_text(errno));
  size_ += bytes.size();
}

}  // namespace sft
