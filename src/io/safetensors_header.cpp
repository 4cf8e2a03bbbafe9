// Parsing and validation of a safetensors header and data layout (no tensor bytes read).
#include <algorithm>
#include <cstring>
#include <limits>

#include "io/json.h"
#include "io/safetensors.h"

namespace sft {

std::string_view safetensors_errc_name(SafetensorsErrc code) {
  switch (code) {
    case SafetensorsErrc::kFileTooSmall:
      return "file_too_small";
    case SafetensorsErrc::kHeaderTooLarge:
      return "header_too_large";
    case SafetensorsErrc::kHeaderOutOfBounds:
      return "header_out_of_bounds";
    case SafetensorsErrc::kInvalidUtf8:
      return "invalid_utf8";
    case SafetensorsErrc::kInvalidJson:
      return "invalid_json";
    case SafetensorsErrc::kHeaderNotObject:
      return "header_not_object";
    case SafetensorsErrc::kDuplicateName:
      return "duplicate_name";
    case SafetensorsErrc::kInvalidMetadata:
      return "invalid_metadata";
    case SafetensorsErrc::kInvalidTensorEntry:
      return "invalid_tensor_entry";
    case SafetensorsErrc::kUnknownDtype:
      return "unknown_dtype";
    case SafetensorsErrc::kShapeOverflow:
      return "shape_overflow";
    case SafetensorsErrc::kInvalidOffsets:
      return "invalid_offsets";
    case SafetensorsErrc::kSizeMismatch:
      return "size_mismatch";
    case SafetensorsErrc::kHoleInData:
      return "hole_in_data";
    case SafetensorsErrc::kOverlappingData:
      return "overlapping_data";
    case SafetensorsErrc::kDataPastEnd:
      return "data_past_end";
    case SafetensorsErrc::kTrailingData:
      return "trailing_data";
    case SafetensorsErrc::kInvalidIndex:
      return "invalid_index";
    case SafetensorsErrc::kMissingShard:
      return "missing_shard";
    case SafetensorsErrc::kTensorNotInShard:
      return "tensor_not_in_shard";
    case SafetensorsErrc::kTensorNotInIndex:
      return "tensor_not_in_index";
    case SafetensorsErrc::kTensorInTwoShards:
      return "tensor_in_two_shards";
    case SafetensorsErrc::kNoWeights:
      return "no_weights";
    case SafetensorsErrc::kUnknownTensor:
      return "unknown_tensor";
  }
  return "unknown";
}

SafetensorsError::SafetensorsError(SafetensorsErrc code, std::string_view message)
    : Error("safetensors", message), code_(code) {}

namespace {

constexpr std::string_view kReSave =
    "the file is damaged or was not written by a safetensors writer; re-export it with "
    "safetensors.torch.save_file or save_pretrained";

[[noreturn]] void reject(SafetensorsErrc code, const std::string& file, const std::string& place,
                         std::string_view problem, std::string_view hint = kReSave) {
  throw SafetensorsError(code, describe_file_problem({file, place}, problem, hint) + " [" +
                                   std::string(safetensors_errc_name(code)) + "]");
}

std::string tensor_place(const std::string& name) {
  return "tensor '" + name + "'";
}

TensorEntry parse_entry(const std::string& file, const std::string& name, const Json& value) {
  const std::string place = tensor_place(name);
  constexpr std::string_view kShapeHint =
      "an entry is {\"dtype\": \"F32\", \"shape\": [d0, ...], \"data_offsets\": [begin, end]}";
  if (!value.is_object()) {
    reject(SafetensorsErrc::kInvalidTensorEntry, file, place,
           "entry is a " + json_type_name(value) + ", expected an object", kShapeHint);
  }
  auto dtype_it = value.find("dtype");
  auto shape_it = value.find("shape");
  auto offsets_it = value.find("data_offsets");
  if (dtype_it == value.end() || shape_it == value.end() || offsets_it == value.end()) {
    reject(SafetensorsErrc::kInvalidTensorEntry, file, place,
           "entry lacks one of dtype, shape, data_offsets", kShapeHint);
  }
  if (!dtype_it->is_string()) {
    reject(SafetensorsErrc::kInvalidTensorEntry, file, place, "dtype is not a string", kShapeHint);
  }
  if (!shape_it->is_array() || !std::all_of(shape_it->begin(), shape_it->end(),
                                            [](const Json& d) { return d.is_number_unsigned(); })) {
    reject(SafetensorsErrc::kInvalidTensorEntry, file, place,
           "shape is not a list of non-negative integers", kShapeHint);
  }
  if (!offsets_it->is_array() || offsets_it->size() != 2 ||
      !(*offsets_it)[0].is_number_unsigned() || !(*offsets_it)[1].is_number_unsigned()) {
    reject(SafetensorsErrc::kInvalidTensorEntry, file, place,
           "data_offsets is not a pair of non-negative integers", kShapeHint);
  }
  const std::string& dtype_text = dtype_it->get_ref<const std::string&>();
  std::optional<DType> dtype = parse_dtype(dtype_text);
  if (!dtype) {
    reject(SafetensorsErrc::kUnknownDtype, file, place, "unknown dtype '" + dtype_text + "'",
           "supported: F64, F32, F16, BF16, F8_E4M3, F8_E5M2, I64, I32, I16, I8, U8, BOOL");
  }
  TensorEntry entry{
      name, *dtype, {}, (*offsets_it)[0].get<uint64_t>(), (*offsets_it)[1].get<uint64_t>()};
  uint64_t count = 1;
  bool overflow = false;
  for (const Json& d : *shape_it) {
    uint64_t dim = d.get<uint64_t>();
    if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) overflow = true;
    if (dim != 0 && count > std::numeric_limits<uint64_t>::max() / dim) overflow = true;
    if (!overflow) count *= dim;
    entry.shape.push_back(static_cast<int64_t>(dim));
  }
  const uint64_t item = dtype_size(*dtype);
  if (overflow || count > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
      count > std::numeric_limits<uint64_t>::max() / item) {
    reject(SafetensorsErrc::kShapeOverflow, file, place,
           "shape " + shape_it->dump() + " has more elements or bytes than 64 bits can count");
  }
  if (entry.end < entry.begin) {
    reject(SafetensorsErrc::kInvalidOffsets, file, place,
           "data_offsets end " + std::to_string(entry.end) + " is before begin " +
               std::to_string(entry.begin));
  }
  if (entry.end - entry.begin != count * item) {
    reject(SafetensorsErrc::kSizeMismatch, file, place,
           "data_offsets span " + std::to_string(entry.end - entry.begin) + " bytes but " +
               dtype_text + " " + shape_it->dump() + " needs " + std::to_string(count * item));
  }
  return entry;
}

}  // namespace

SafetensorsHeader parse_safetensors_header(std::span<const std::byte> file,
                                           const std::string& file_label) {
  if (file.size() < 8) {
    reject(
        SafetensorsErrc::kFileTooSmall, file_label, "",
        "file has " + std::to_string(file.size()) + " bytes, fewer than the 8-byte header length");
  }
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | std::to_integer<uint64_t>(file[i]);
  if (header_len > kSafetensorsMaxHeaderBytes) {
    reject(SafetensorsErrc::kHeaderTooLarge, file_label, "header",
           "header length " + std::to_string(header_len) + " exceeds the 100,000,000-byte limit");
  }
  if (header_len > file.size() - 8) {
    reject(SafetensorsErrc::kHeaderOutOfBounds, file_label, "header",
           "header length " + std::to_string(header_len) + " runs past the end of the " +
               std::to_string(file.size()) + "-byte file",
           "the file is truncated; download or copy it again");
  }
  std::string_view text(reinterpret_cast<const char*>(file.data() + 8), header_len);

  Json header;
  try {
    header = parse_json_strict(text, "safetensors", file_label);
  } catch (const JsonError& e) {
    switch (e.kind()) {
      case JsonError::Kind::kInvalidUtf8:
        reject(SafetensorsErrc::kInvalidUtf8, file_label, "header " + e.detail(),
               "header is not valid UTF-8");
      case JsonError::Kind::kDuplicateKey:
        reject(SafetensorsErrc::kDuplicateName, file_label, tensor_place(e.detail()),
               "name appears more than once in the header");
      case JsonError::Kind::kSyntax:
        reject(SafetensorsErrc::kInvalidJson, file_label, "header",
               "header is not valid JSON: " + e.detail());
    }
  }
  if (!header.is_object()) {
    reject(SafetensorsErrc::kHeaderNotObject, file_label, "header",
           "header is a JSON " + json_type_name(header) + ", expected an object");
  }

  SafetensorsHeader out;
  out.data_start = 8 + header_len;
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") {
      if (!value.is_object()) {
        reject(SafetensorsErrc::kInvalidMetadata, file_label, "__metadata__",
               "is a " + json_type_name(value) + ", expected an object of strings");
      }
      for (const auto& [key, item] : value.items()) {
        if (!item.is_string()) {
          reject(SafetensorsErrc::kInvalidMetadata, file_label, "__metadata__ key '" + key + "'",
                 "value is a " + json_type_name(item) + ", metadata values must be strings");
        }
        out.metadata.emplace(key, item.get<std::string>());
      }
      continue;
    }
    out.tensors.push_back(parse_entry(file_label, name, value));
  }

  // The tensors must tile the data region exactly: sorted by begin, each starts where
  // the previous ended, the first at 0 and the last at the end of the file.
  std::stable_sort(out.tensors.begin(), out.tensors.end(),
                   [](const TensorEntry& a, const TensorEntry& b) {
                     return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
                   });
  uint64_t expected_begin = 0;
  const std::string* previous = nullptr;
  for (const TensorEntry& t : out.tensors) {
    if (t.begin > expected_begin) {
      reject(SafetensorsErrc::kHoleInData, file_label, tensor_place(t.name),
             "starts at byte " + std::to_string(t.begin) + " of the data region, leaving bytes " +
                 std::to_string(expected_begin) + ".." + std::to_string(t.begin) + " unowned" +
                 (previous ? " after tensor '" + *previous + "'" : std::string(" at the start")));
    }
    if (t.begin < expected_begin) {
      reject(SafetensorsErrc::kOverlappingData, file_label, tensor_place(t.name),
             "bytes " + std::to_string(t.begin) + ".." + std::to_string(t.end) +
                 " overlap tensor '" + (previous ? *previous : std::string()) + "'");
    }
    expected_begin = t.end;
    previous = &t.name;
  }
  const uint64_t data_size = file.size() - out.data_start;
  if (expected_begin > data_size) {
    reject(SafetensorsErrc::kDataPastEnd, file_label, tensor_place(*previous),
           "data ends at byte " + std::to_string(expected_begin) +
               " but the data region has only " + std::to_string(data_size) + " bytes",
           "the file is truncated; download or copy it again");
  }
  if (expected_begin < data_size) {
    reject(SafetensorsErrc::kTrailingData, file_label, "data region",
           std::to_string(data_size - expected_begin) +
               " bytes after the last tensor belong to no tensor");
  }
  return out;
}

}  // namespace sft
