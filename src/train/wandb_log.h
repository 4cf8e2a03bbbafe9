// The framing of a W&B transaction log (run-<id>.wandb), as wandb-core's transactionlog
// writes it: a 7-byte file header (":W&B", the magic 0xBEE1 little-endian, store version 0),
// then LevelDB's log format: 32 KiB blocks; each record is cut into chunks that never cross
// a block, each chunk a 7-byte header (CRC, u16 little-endian length, type FULL 1 / FIRST 2
// / MIDDLE 3 / LAST 4) and its bytes; a block tail shorter than a header is zero-filled.
// Unlike LevelDB (masked CRC-32C), W&B's checksum is the plain CRC-32 (IEEE, zlib's) of the
// type byte followed by the chunk. The header counts as the first block's first 7 bytes.
// tests/fixtures/wandb/sdk_blocks.wandb (written by the SDK) is reproduced byte for byte.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace sft {

inline constexpr size_t kWandbBlockSize = 32768;
inline constexpr size_t kWandbChunkHeader = 7;

// The file header (7 bytes).
std::string wandb_log_header();
// The bytes that append `payload` as one record to a log whose size is `file_size` (which
// fixes the position in the current block). Pure, for tests.
std::string wandb_frame_record(std::string_view payload, uint64_t file_size);

// An open .wandb file; each record is flushed as it is appended, so a killed run leaves a
// readable log (wandb sync reads what is there and marks the run failed without an exit).
class WandbLogFile {
 public:
  explicit WandbLogFile(const std::string& path);  // creates it and writes the header
  ~WandbLogFile();
  WandbLogFile(const WandbLogFile&) = delete;
  WandbLogFile& operator=(const WandbLogFile&) = delete;

  void append(std::string_view record);
  const std::string& path() const { return path_; }

 private:
  void write(const std::string& bytes);
  std::string path_;
  std::FILE* file_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace sft
