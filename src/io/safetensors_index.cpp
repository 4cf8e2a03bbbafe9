// Sharded checkpoints: model.safetensors.index.json and the shards it names.
#include <algorithm>
#include <filesystem>

#include "io/json.h"
#include "io/safetensors.h"

namespace sft {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void reject(SafetensorsErrc code, const std::string& file, const std::string& place,
                         std::string_view problem, std::string_view hint) {
  throw SafetensorsError(code, describe_file_problem({file, place}, problem, hint) + " [" +
                                   std::string(safetensors_errc_name(code)) + "]");
}

}  // namespace

SafetensorsCheckpoint SafetensorsCheckpoint::open_file(const std::string& path) {
  SafetensorsCheckpoint out;
  out.source_ = path;
  out.files_.push_back(SafetensorsFile::open(path));
  for (const TensorEntry& e : out.files_[0].entries()) out.where_.emplace(e.name, 0);
  return out;
}

SafetensorsCheckpoint SafetensorsCheckpoint::open_index(const std::string& index_path) {
  Json index;
  try {
    index = read_json_file(index_path, "safetensors");
  } catch (const JsonError& e) {
    throw SafetensorsError(SafetensorsErrc::kInvalidIndex, e.what());
  }
  constexpr std::string_view kIndexHint =
      "an index is {\"metadata\": {...}, \"weight_map\": {\"tensor name\": \"shard file\"}}";
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object()) {
    reject(SafetensorsErrc::kInvalidIndex, index_path, "", "no weight_map object", kIndexHint);
  }
  const fs::path dir = fs::path(index_path).parent_path();
  SafetensorsCheckpoint out;
  out.source_ = index_path;
  std::map<std::string, size_t> file_slot;      // shard file name → index into files_
  std::map<std::string, std::string> expected;  // tensor → shard file name
  for (const auto& [name, file] : index["weight_map"].items()) {
    if (!file.is_string()) {
      reject(SafetensorsErrc::kInvalidIndex, index_path, "weight_map key '" + name + "'",
             "value is a " + json_type_name(file) + ", expected a shard file name", kIndexHint);
    }
    const std::string& shard = file.get_ref<const std::string&>();
    if (!file_slot.count(shard)) {
      fs::path shard_path = dir / shard;
      if (!fs::is_regular_file(shard_path)) {
        reject(SafetensorsErrc::kMissingShard, index_path, "weight_map key '" + name + "'",
               "shard '" + shard + "' does not exist at " + shard_path.string(),
               "the download is incomplete; fetch every shard the index names");
      }
      file_slot.emplace(shard, out.files_.size());
      out.files_.push_back(SafetensorsFile::open(shard_path.string()));
    }
    expected.emplace(name, shard);
  }
  for (const auto& [shard, slot] : file_slot) {
    for (const TensorEntry& e : out.files_[slot].entries()) {
      auto listed = expected.find(e.name);
      if (listed == expected.end()) {
        reject(SafetensorsErrc::kTensorNotInIndex, out.files_[slot].path(),
               "tensor '" + e.name + "'", "is in the shard but not in the index " + index_path,
               "the index and shards come from different saves; download them again together");
      }
      if (listed->second != shard) {
        reject(SafetensorsErrc::kTensorInTwoShards, out.files_[slot].path(),
               "tensor '" + e.name + "'",
               "is also in this shard, but the index places it in '" + listed->second + "'",
               "the shards come from different saves; download them again together");
      }
      out.where_.emplace(e.name, slot);
    }
  }
  for (const auto& [name, shard] : expected) {
    if (!out.where_.count(name)) {
      reject(SafetensorsErrc::kTensorNotInShard, index_path, "weight_map key '" + name + "'",
             "shard '" + shard + "' does not contain this tensor",
             "the index and shards come from different saves; download them again together");
    }
  }
  return out;
}

SafetensorsCheckpoint SafetensorsCheckpoint::open_dir(const std::string& dir) {
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  if (fs::is_regular_file(index)) return open_index(index.string());
  const fs::path single = fs::path(dir) / "model.safetensors";
  if (fs::is_regular_file(single)) return open_file(single.string());
  reject(SafetensorsErrc::kNoWeights, dir, "",
         "no model.safetensors or model.safetensors.index.json",
         "sft reads safetensors weights; convert .bin checkpoints with "
         "save_pretrained(safe_serialization=True)");
}

std::vector<std::string> SafetensorsCheckpoint::names() const {
  std::vector<std::string> out;
  out.reserve(where_.size());
  for (const auto& [name, slot] : where_) out.push_back(name);
  return out;
}

const SafetensorsFile& SafetensorsCheckpoint::file_of(const std::string& name) const {
  auto it = where_.find(name);
  if (it == where_.end()) {
    reject(SafetensorsErrc::kUnknownTensor, source_, "tensor '" + name + "'",
           "no such tensor in the checkpoint",
           "run `sft inspect` on the model to list its tensors");
  }
  return files_[it->second];
}

const std::string& SafetensorsCheckpoint::stored_name(const std::string& name) const {
  auto it = stored_names_.find(name);
  return it == stored_names_.end() ? name : it->second;
}

const TensorEntry& SafetensorsCheckpoint::entry(const std::string& name) const {
  return *file_of(name).find(stored_name(name));
}

Tensor SafetensorsCheckpoint::tensor(const std::string& name) const {
  return file_of(name).tensor(stored_name(name));
}

SafetensorsCheckpoint SafetensorsCheckpoint::renamed(
    SafetensorsCheckpoint ckpt, const std::function<std::string(const std::string&)>& rename) {
  SafetensorsCheckpoint out;
  out.source_ = ckpt.source_;
  out.files_ = std::move(ckpt.files_);
  for (const auto& [name, slot] : ckpt.where_) {
    const std::string& stored = ckpt.stored_name(name);
    std::string shown = rename(name);
    if (shown.empty()) continue;
    if (!out.where_.emplace(shown, slot).second)
      reject(SafetensorsErrc::kInvalidIndex, out.source_, "tensor '" + stored + "'",
             "two tensors would both be read as '" + shown + "'",
             "the checkpoint holds the same model part twice; save it again");
    if (shown != stored) out.stored_names_.emplace(std::move(shown), stored);
  }
  return out;
}

}  // namespace sft
