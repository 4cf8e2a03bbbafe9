// Writing .safetensors files and sharded checkpoints.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

#include "io/atomic_file.h"
#include "io/json.h"
#include "io/safetensors.h"

namespace sft {

namespace {

std::string json_string(const std::string& s) {
  return Json(s).dump();
}

// Data order of the Python writer: widest types first, so that with the header padded to 8
// bytes every tensor is aligned to its element size; within a width, this fixed type order.
int write_rank(DType dtype) {
  switch (dtype) {
    case DType::kI64:
      return 0;
    case DType::kF64:
      return 1;
    case DType::kF32:
      return 2;
    case DType::kI32:
      return 3;
    case DType::kBF16:
      return 4;
    case DType::kF16:
      return 5;
    case DType::kI16:
      return 6;
    case DType::kF8E4M3:
      return 7;
    case DType::kF8E5M2:
      return 8;
    case DType::kI8:
      return 9;
    case DType::kU8:
      return 10;
    case DType::kBool:
      return 11;
  }
  return 12;
}

}  // namespace

std::string serialize_safetensors_header(const std::vector<NamedTensor>& tensors,
                                         const std::map<std::string, std::string>& metadata,
                                         std::vector<size_t>* data_order) {
  std::set<std::string> names;
  for (const NamedTensor& t : tensors) {
    if (t.name.empty() || t.name == "__metadata__") {
      fail("safetensors", "cannot write a tensor named '" + t.name + "'");
    }
    if (!names.insert(t.name).second)
      fail("safetensors", "cannot write tensor '" + t.name + "' twice");
  }
  std::vector<size_t> order(tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    int ra = write_rank(tensors[a].tensor.dtype()), rb = write_rank(tensors[b].tensor.dtype());
    return ra != rb ? ra < rb : tensors[a].name < tensors[b].name;
  });

  // Written by hand rather than via Json::dump so that keys stay in data order, as the Python
  // writer does.
  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [key, value] : metadata) {
      if (!first) header += ",";
      first = false;
      header += json_string(key) + ":" + json_string(value);
    }
    header += "}";
  }
  uint64_t offset = 0;
  for (size_t i : order) {
    const Tensor& t = tensors[i].tensor;
    if (header.size() > 1) header += ",";
    header += json_string(tensors[i].name) + ":{\"dtype\":\"" + std::string(dtype_name(t.dtype())) +
              "\",\"shape\":[";
    for (size_t d = 0; d < t.ndim(); ++d) header += (d ? "," : "") + std::to_string(t.dim(d));
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," +
              std::to_string(offset + t.nbytes()) + "]}";
    offset += t.nbytes();
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');
  if (data_order != nullptr) *data_order = std::move(order);
  return header;
}

void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata, const TensorFill& fill) {
  std::vector<size_t> order;
  const std::string header = serialize_safetensors_header(tensors, metadata, &order);
  unsigned char length[8];
  for (int i = 0; i < 8; ++i)
    length[i] = static_cast<unsigned char>(uint64_t{header.size()} >> (8 * i));
  AtomicFile file(path);
  file.write(std::span(reinterpret_cast<const std::byte*>(length), 8));
  file.write(header);
  for (size_t i : order) {
    if (!fill) {
      file.write(tensors[i].tensor.byte_span());
      continue;
    }
    const std::span<const std::byte> bytes = fill(i);
    if (bytes.size() != tensors[i].tensor.nbytes())
      fail("safetensors",
           path + ": tensor '" + tensors[i].name + "': " + std::to_string(bytes.size()) +
               " bytes filled in, its header says " + std::to_string(tensors[i].tensor.nbytes()));
    file.write(bytes);
  }
  file.commit();
}

std::vector<std::string> write_safetensors_sharded(
    const std::string& dir, const std::vector<NamedTensor>& tensors, uint64_t max_shard_bytes,
    const std::map<std::string, std::string>& metadata, const std::string& base,
    const TensorFill& fill) {
  namespace fs = std::filesystem;
  // Greedy in the given order, as transformers splits: a tensor larger than the limit gets a shard
  // of its own.
  std::vector<std::vector<NamedTensor>> shards(1);
  std::vector<std::vector<size_t>> indices(1);  // each shard's tensors' places in `tensors`
  uint64_t shard_bytes = 0, total_bytes = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const NamedTensor& t = tensors[i];
    if (!shards.back().empty() && shard_bytes + t.tensor.nbytes() > max_shard_bytes) {
      shards.emplace_back();
      indices.emplace_back();
      shard_bytes = 0;
    }
    shards.back().push_back(t);
    indices.back().push_back(i);
    shard_bytes += t.tensor.nbytes();
    total_bytes += t.tensor.nbytes();
  }
  fs::create_directories(dir);
  if (shards.size() == 1) {
    std::string name = base + ".safetensors";
    write_safetensors((fs::path(dir) / name).string(), shards[0], metadata, fill);
    return {name};
  }
  std::vector<std::string> written;
  Json weight_map = Json::object();
  for (size_t k = 0; k < shards.size(); ++k) {
    char name[64];
    std::snprintf(name, sizeof name, "-%05zu-of-%05zu.safetensors", k + 1, shards.size());
    written.push_back(base + name);
    TensorFill shard_fill;
    if (fill) shard_fill = [&, k](size_t i) { return fill(indices[k][i]); };
    write_safetensors((fs::path(dir) / written.back()).string(), shards[k], metadata, shard_fill);
    for (const NamedTensor& t : shards[k]) weight_map[t.name] = written.back();
  }
  Json index = {{"metadata", {{"total_size", total_bytes}}}, {"weight_map", weight_map}};
  std::string index_name = base + ".safetensors.index.json";
  write_file_atomically((fs::path(dir) / index_name).string(), index.dump(2) + "\n");
  written.push_back(index_name);
  return written;
}

}  // namespace sft
