// CRC-32C (Castagnoli), as TFRecord / TensorBoard event files checksum their records.
// Written here because Debian 12 packages no C/C++ CRC-32C library (zlib's crc32 uses
// another polynomial); it is a small table-driven loop and only runs on log writes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace sft {

uint32_t crc32c(std::span<const std::byte> data);
// TFRecord's "masked" CRC: rotate right by 15 and add a constant.
uint32_t masked_crc32c(std::span<const std::byte> data);

}  // namespace sft
