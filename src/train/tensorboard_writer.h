// TensorBoard event files (what `--report_to tensorboard` writes).
//
// An event file is a TFRecord stream: per record a little-endian u64 length, its masked
// CRC-32C, the bytes of a serialized `Event` protocol buffer, and their masked CRC-32C.
// The first event carries file_version "brain.Event:2"; each scalar is an Event
// {wall_time, step, summary {value {tag, simple_value}}}; each text (the "args" and
// "model_config" JSON transformers' TensorBoardCallback adds at the start) is a summary value
// tagged "<tag>/text_summary" holding a one-string tensor with the "text" plugin's metadata,
// as torch's SummaryWriter.add_text writes it. The three messages are encoded by
// hand (a dozen bytes each) rather than through protobuf's generated code, which would need
// protoc at build time for three fields. Every record is flushed as it is written, so a
// killed run leaves a readable file.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace sft {

class TensorBoardWriter {
 public:
  // Creates `dir` and "events.out.tfevents.<seconds>.<host>.<pid>.0" inside it.
  TensorBoardWriter(const std::string& dir, double wall_time);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  void add_scalar(std::string_view tag, float value, int64_t step, double wall_time);
  void add_text(std::string_view tag, std::string_view text, int64_t step, double wall_time);
  const std::string& path() const { return path_; }

 private:
  void write_record(const std::string& event);

  std::string path_;
  std::FILE* file_ = nullptr;
};

// The serialized Event protos, exposed for tests.
std::string encode_file_version_event(double wall_time);
std::string encode_scalar_event(std::string_view tag, float value, int64_t step, double wall_time);
std::string encode_text_event(std::string_view tag, std::string_view text, int64_t step,
                              double wall_time);

// Where transformers 5 puts TensorBoard logs by default (TensorBoardCallback, default_logdir):
// output_dir/runs/<local time as %b%d_%H-%M-%S>_<hostname>, e.g. out/runs/Dec01_10-00-00_host,
// so every run, an overwritten one included, has a folder of its own.
std::string default_tensorboard_dir(const std::string& output_dir, int64_t unix_seconds,
                                    const std::string& host);
// This machine's host name (gethostname), "localhost" if it has none.
std::string host_name();
// A whole TFRecord (length, CRCs, payload).
std::string encode_tfrecord(const std::string& payload);

}  // namespace sft
