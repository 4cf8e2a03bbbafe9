#include "train/tensorboard_writer.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "core/crc32c.h"
#include "core/error.h"

namespace sft {

namespace {

// Protocol-buffer wire format: a key is (field << 3 | wire type).
enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void put_key(std::string& out, uint32_t field, WireType type) {
  put_varint(out, (uint64_t{field} << 3) | type);
}

template <typename T>
void put_fixed(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));  // little-endian host, as the wire format
  out.append(bytes, sizeof(T));
}

void put_bytes(std::string& out, uint32_t field, std::string_view bytes) {
  put_key(out, field, kLengthDelimited);
  put_varint(out, bytes.size());
  out.append(bytes);
}

// Event: wall_time = 1 (double), step = 2 (int64), file_version = 3 (string), summary = 5.
std::string event_header(double wall_time, int64_t step) {
  std::string event;
  put_key(event, 1, kFixed64);
  put_fixed(event, wall_time);
  if (step != 0) {  // proto3 omits default values
    put_key(event, 2, kVarint);
    put_varint(event, static_cast<uint64_t>(step));
  }
  return event;
}

std::span<const std::byte> as_bytes(std::string_view s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

}  // namespace

std::string encode_file_version_event(double wall_time) {
  std::string event = event_header(wall_time, 0);
  put_bytes(event, 3, "brain.Event:2");
  return event;
}

std::string encode_scalar_event(std::string_view tag, float value, int64_t step, double wall_time) {
  std::string summary_value;  // Summary.Value: tag = 1, simple_value = 2 (float)
  put_bytes(summary_value, 1, tag);
  put_key(summary_value, 2, kFixed32);
  put_fixed(summary_value, value);
  std::string summary;  // Summary: repeated Value value = 1
  put_bytes(summary, 1, summary_value);
  std::string event = event_header(wall_time, step);
  put_bytes(event, 5, summary);
  return event;
}

std::string encode_text_event(std::string_view tag, std::string_view text, int64_t step,
                              double wall_time) {
  // TensorProto: dtype = 1 (DT_STRING = 7), tensor_shape = 2 {dim = 2 {size = 1}},
  // string_val = 8.
  std::string dim;
  put_key(dim, 1, kVarint);
  put_varint(dim, 1);
  std::string shape;
  put_bytes(shape, 2, dim);
  std::string tensor;
  put_key(tensor, 1, kVarint);
  put_varint(tensor, 7);
  put_bytes(tensor, 2, shape);
  put_bytes(tensor, 8, text);
  // SummaryMetadata: plugin_data = 1 {plugin_name = 1}; the text plugin's content (version 0)
  // serializes to nothing.
  std::string plugin;
  put_bytes(plugin, 1, "text");
  std::string metadata;
  put_bytes(metadata, 1, plugin);
  // Summary.Value: tag = 1, tensor = 8, metadata = 9 (in the order torch writes them).
  std::string summary_value;
  put_bytes(summary_value, 1, std::string(tag) + "/text_summary");
  put_bytes(summary_value, 8, tensor);
  put_bytes(summary_value, 9, metadata);
  std::string summary;
  put_bytes(summary, 1, summary_value);
  std::string event = event_header(wall_time, step);
  put_bytes(event, 5, summary);
  return event;
}

std::string host_name() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') return "localhost";
  return host;
}

std::string default_tensorboard_dir(const std::string& output_dir, int64_t unix_seconds,
                                    const std::string& host) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm local{};
  localtime_r(&t, &local);
  char stamp[64];
  // datetime.now().strftime("%b%d_%H-%M-%S"); the C locale's month names, as Python's default.
  std::strftime(stamp, sizeof stamp, "%b%d_%H-%M-%S", &local);
  return (std::filesystem::path(output_dir) / "runs" / (std::string(stamp) + "_" + host)).string();
}

std::string encode_tfrecord(const std::string& payload) {
  std::string record;
  put_fixed(record, uint64_t{payload.size()});
  const uint32_t length_crc = masked_crc32c(as_bytes(record));
  put_fixed(record, length_crc);
  record += payload;
  put_fixed(record, masked_crc32c(as_bytes(payload)));
  return record;
}

TensorBoardWriter::TensorBoardWriter(const std::string& dir, double wall_time) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  path_ = (std::filesystem::path(dir) /
           ("events.out.tfevents." + std::to_string(static_cast<int64_t>(wall_time)) + "." +
            host_name() + "." + std::to_string(::getpid()) + ".0"))
              .string();
  file_ = std::fopen(path_.c_str(), "wb");
  if (file_ == nullptr) fail("tensorboard", "cannot create " + path_ + ": " + errno_text(errno));
  write_record(encode_file_version_event(wall_time));
}

TensorBoardWriter::~TensorBoardWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

void TensorBoardWriter::add_scalar(std::string_view tag, float value, int64_t step,
                                   double wall_time) {
  write_record(encode_scalar_event(tag, value, step, wall_time));
}

void TensorBoardWriter::add_text(std::string_view tag, std::string_view text, int64_t step,
                                 double wall_time) {
  write_record(encode_text_event(tag, text, step, wall_time));
}

void TensorBoardWriter::write_record(const std::string& event) {
  const std::string record = encode_tfrecord(event);
  if (std::fwrite(record.data(), 1, record.size(), file_) != record.size() ||
      std::fflush(file_) != 0) {
    fail("tensorboard", "cannot write " + path_ + ": " + errno_text(errno));
  }
}

}  // namespace sft
