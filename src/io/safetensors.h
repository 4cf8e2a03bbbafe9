// safetensors: reading (zero-copy from an mmap) and writing (atomic) HF weight files.
//
// Format: 8-byte little-endian header length N, N bytes of UTF-8 JSON
// {"__metadata__": {str: str}, "<name>": {"dtype", "shape", "data_offsets": [begin, end]}},
// then the data region; offsets are relative to it. Validation is as strict as the
// reference implementation (huggingface/safetensors): every rule has its own
// SafetensorsErrc, and every message names the file and, where there is one, the tensor.
// Sharded checkpoints (model.safetensors.index.json) are in safetensors_index.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"

namespace sft {

class MappedFile;

inline constexpr uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;

enum class SafetensorsErrc {
  kFileTooSmall,        // fewer than 8 bytes: no header length
  kHeaderTooLarge,      // header length > 100 MB
  kHeaderOutOfBounds,   // header length runs past the end of the file
  kInvalidUtf8,         // header is not UTF-8
  kInvalidJson,         // header is not JSON
  kHeaderNotObject,     // header JSON is not an object
  kDuplicateName,       // a tensor name (or __metadata__) appears twice
  kInvalidMetadata,     // __metadata__ is not a string → string object
  kInvalidTensorEntry,  // entry is not {"dtype": str, "shape": [uint...], "data_offsets": [uint,
                        // uint]}
  kUnknownDtype,        // dtype string we do not know
  kShapeOverflow,       // element count or byte size overflows 64 bits
  kInvalidOffsets,      // data_offsets end < begin
  kSizeMismatch,        // end - begin != elements × dtype size
  kHoleInData,          // bytes between tensors (or before the first) that no tensor owns
  kOverlappingData,     // two tensors share bytes
  kDataPastEnd,         // a tensor extends past the end of the file
  kTrailingData,        // bytes after the last tensor
  // Sharded checkpoints:
  kInvalidIndex,       // index JSON is not {"weight_map": {name: file}}
  kMissingShard,       // the index names a file that does not exist
  kTensorNotInShard,   // the index maps a tensor to a shard that lacks it
  kTensorNotInIndex,   // a shard holds a tensor the index does not list
  kTensorInTwoShards,  // the same name in two shards
  kNoWeights,          // a folder with neither model.safetensors nor an index
  kUnknownTensor,      // a lookup of a name the checkpoint does not have
};

// Stable identifier, e.g. "header_too_large", used in messages and the negative corpus.
std::string_view safetensors_errc_name(SafetensorsErrc code);

class SafetensorsError : public Error {
 public:
  SafetensorsError(SafetensorsErrc code, std::string_view message);
  SafetensorsErrc code() const { return code_; }

 private:
  SafetensorsErrc code_;
};

struct TensorEntry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin;  // offsets relative to the data region
  uint64_t end;
};

struct SafetensorsHeader {
  std::map<std::string, std::string> metadata;
  std::vector<TensorEntry> tensors;  // ordered by data offset
  uint64_t data_start = 0;           // 8 + header length: where the data region starts in the file
};

// Parses and validates a whole file's bytes (header and layout; tensor bytes are not read).
// `file_label` names the file in errors. Throws SafetensorsError. This is the fuzzing surface.
SafetensorsHeader parse_safetensors_header(std::span<const std::byte> file,
                                           const std::string& file_label);

// One .safetensors file, memory-mapped; tensors borrow from the mapping (zero-copy).
class SafetensorsFile {
 public:
  static SafetensorsFile open(const std::string& path);

  const std::string& path() const;
  const SafetensorsHeader& header() const { return header_; }
  const std::vector<TensorEntry>& entries() const { return header_.tensors; }
  const std::map<std::string, std::string>& metadata() const { return header_.metadata; }
  const TensorEntry* find(const std::string& name) const;
  // Borrowed view of a tensor's bytes; throws kUnknownTensor for a name not in the file.
  Tensor tensor(const std::string& name) const;
  Tensor tensor(const TensorEntry& entry) const;
  // The tensor's bytes handed back to the page cache once converted into memory of the
  // caller's (io/mapped_file.h's release_pages); borrowed views of it stay valid.
  void release_pages(const TensorEntry& entry) const;

 private:
  std::shared_ptr<const MappedFile> file_;
  SafetensorsHeader header_;
  std::map<std::string, size_t> by_name_;
};

struct NamedTensor {
  std::string name;
  Tensor tensor;
};

// The header exactly as the Python library writes it (compact JSON, __metadata__ first with
// sorted keys, tensors in data order: by dtype width descending then name; padded with spaces
// to 8 bytes). `data_order` receives the order of `tensors` in the data region.
// Throws on duplicate or empty names.
std::string serialize_safetensors_header(const std::vector<NamedTensor>& tensors,
                                         const std::map<std::string, std::string>& metadata,
                                         std::vector<size_t>* data_order);

// A tensor's bytes produced only when the writer reaches it, in data order, so that a caller
// holds one tensor at a time (a sharded model gathered tensor by tensor, a dtype conversion
// done per tensor): fill(i) returns the bytes of tensors[i] (exactly its dtype and size), valid
// until the next call or the writer's return. With a fill, `tensors` give only names, dtypes
// and shapes (their data is not read; a borrowed tensor of null data will do). The file is
// the same as the one written from whole tensors.
using TensorFill = std::function<std::span<const std::byte>(size_t index)>;

// Writes one file atomically (temp + fsync + rename).
void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {},
                       const TensorFill& fill = {});

// Writes `tensors` into `dir` as transformers' save_pretrained does: "<base>.safetensors" when
// they fit in max_shard_bytes, else "<base>-0000K-of-0000N.safetensors" plus
// "<base>.safetensors.index.json". Every file is written atomically, the index last.
// Returns the file names written.
// With a fill, its index is the tensor's in `tensors`.
std::vector<std::string> write_safetensors_sharded(
    const std::string& dir, const std::vector<NamedTensor>& tensors, uint64_t max_shard_bytes,
    const std::map<std::string, std::string>& metadata = {}, const std::string& base = "model",
    const TensorFill& fill = {});

// Block reads, for tensor-parallel slices (safetensors_block.cpp): one block of a 1-D or 2-D
// tensor as f32, converted from any dtype Tensor::to_f32_vector converts, reading only the
// block's bytes of the mapping (no copy of the whole tensor). dim 0: rows [begin, begin +
// count), for a 1-D tensor its elements; dim 1: columns [begin, begin + count) of every row
// (2-D tensors only). `out` holds exactly the block, row-major: count × columns (dim 0) or
// rows × count (dim 1). Errors ("[safetensors] <file>: tensor '<name>': ...") name the file
// and the tensor.
struct TensorBlock {
  int dim = 0;
  int64_t begin = 0;
  int64_t count = 0;
};
// The whole tensor as one block (along dim 0).
TensorBlock whole_tensor_block(const TensorEntry& entry);
void read_tensor_block(const SafetensorsFile& file, const TensorEntry& entry,
                       const TensorBlock& block, std::span<float> out);
// Elements [first, first + out.size()) of a tensor of any shape, row-major, as f32: a ZeRO-3
// rank's shard of it (model/held_values.h), reading only those bytes of the mapping.
void read_tensor_run(const SafetensorsFile& file, const TensorEntry& entry, int64_t first,
                     std::span<float> out);

// All the weights of a model folder: one model.safetensors or the shards of an index.
class SafetensorsCheckpoint {
 public:
  // `dir` holds model.safetensors.index.json or model.safetensors.
  static SafetensorsCheckpoint open_dir(const std::string& dir);
  static SafetensorsCheckpoint open_index(const std::string& index_path);
  static SafetensorsCheckpoint open_file(const std::string& path);

  const std::vector<SafetensorsFile>& files() const { return files_; }
  // Names in sorted order.
  std::vector<std::string> names() const;
  bool contains(const std::string& name) const { return where_.count(name) != 0; }
  const TensorEntry& entry(const std::string& name) const;
  const SafetensorsFile& file_of(const std::string& name) const;
  Tensor tensor(const std::string& name) const;
  // Where the checkpoint came from (index or file path), for messages.
  const std::string& source() const { return source_; }

  // The same files with their tensors listed under other names: `rename` maps a name of `ckpt` to
  // the name the view lists it under, or to "" to leave the tensor out (a multimodal folder's
  // text model seen under the text model's own names, model/text_model_names.h). entry() still
  // describes the tensor as its file stores it.
  static SafetensorsCheckpoint renamed(
      SafetensorsCheckpoint ckpt, const std::function<std::string(const std::string&)>& rename);

 private:
  const std::string& stored_name(const std::string& name) const;

  std::string source_;
  std::vector<SafetensorsFile> files_;
  std::map<std::string, size_t> where_;              // name → index into files_
  std::map<std::string, std::string> stored_names_;  // a renamed view's name → its stored name
};

}  // namespace sft
