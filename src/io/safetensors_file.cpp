// One memory-mapped .safetensors file.
#include "io/mapped_file.h"
#include "io/safetensors.h"

namespace sft {

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  SafetensorsFile out;
  out.file_ = MappedFile::open(path);
  out.header_ = parse_safetensors_header(out.file_->bytes(), path);
  for (size_t i = 0; i < out.header_.tensors.size(); ++i)
    out.by_name_.emplace(out.header_.tensors[i].name, i);
  return out;
}

const std::string& SafetensorsFile::path() const {
  return file_->path();
}

const TensorEntry* SafetensorsFile::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &header_.tensors[it->second];
}

Tensor SafetensorsFile::tensor(const std::string& name) const {
  const TensorEntry* entry = find(name);
  if (entry == nullptr) {
    throw SafetensorsError(
        SafetensorsErrc::kUnknownTensor,
        describe_file_problem({path(), "tensor '" + name + "'"}, "no such tensor in the file",
                              "run `sft inspect` on the model to list its tensors"));
  }
  return tensor(*entry);
}

Tensor SafetensorsFile::tensor(const TensorEntry& entry) const {
  const std::byte* data = file_->bytes().data() + header_.data_start + entry.begin;
  return Tensor::borrow(entry.dtype, entry.shape, data, file_);
}

void SafetensorsFile::release_pages(const TensorEntry& entry) const {
  file_->release_pages(header_.data_start + entry.begin, entry.end - entry.begin);
}

}  // namespace sft
