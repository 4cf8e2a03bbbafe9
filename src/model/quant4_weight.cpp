// Reading bitsandbytes 4-bit weights. See quant4_weight.h.
#include "model/quant4_weight.h"

#include <cstring>

#include "core/error.h"

namespace sft::model {

namespace {

constexpr std::string_view kStateSuffix = ".quant_state.bitsandbytes__";

const TensorEntry& require(const SafetensorsFile& file, const std::string& name,
                           const std::string& weight_name) {
  const TensorEntry* entry = file.find(name);
  if (!entry)
    refuse_quant4(file.path() + ": tensor '" + weight_name + "'",
                  "the 4-bit weight has no '" + name + "'");
  return *entry;
}

std::vector<float> f32_tensor(const SafetensorsFile& file, const std::string& name,
                              const std::string& weight_name, size_t count) {
  const TensorEntry& entry = require(file, name, weight_name);
  const Tensor t = file.tensor(entry);
  if (t.dtype() != DType::kF32 || static_cast<size_t>(t.numel()) != count)
    refuse_quant4(file.path() + ": tensor '" + name + "'",
                  "expected " + std::to_string(count) + " float32 values, got " +
                      std::to_string(t.numel()) + " of " + std::string(dtype_name(t.dtype())));
  const auto v = t.values<float>();
  return {v.begin(), v.end()};
}

// The quant_state tensor's name, whichever type it was written for.
const TensorEntry* find_state(const SafetensorsFile& file, const std::string& weight_name) {
  for (const char* type : {"nf4", "fp4"})
    if (const TensorEntry* e = file.find(weight_name + std::string(kStateSuffix) + type)) return e;
  return nullptr;
}

}  // namespace

int64_t Quant4Weight::numel() const {
  return state.shape.at(0) * state.shape.at(1);
}

std::vector<float> Quant4Weight::dequantize() const {
  std::vector<float> out(static_cast<size_t>(numel()));
  ops::cpu::dequantize_4bit(packed, absmax, state.blocksize, state.type, out);
  return out;
}

bool is_quant4_weight(const SafetensorsFile& file, const std::string& weight_name) {
  return find_state(file, weight_name) != nullptr;
}

bool is_quant4_piece(const std::string& name) {
  for (const char* suffix : {".weight.absmax", ".weight.quant_map", ".weight.nested_absmax",
                             ".weight.nested_quant_map"}) {
    const std::string_view s(suffix);
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0)
      return true;
  }
  return name.find(".weight" + std::string(kStateSuffix)) != std::string::npos;
}

Quant4State read_quant4_state(const SafetensorsFile& file, const std::string& weight_name) {
  const std::string where = file.path() + ": tensor '" + weight_name + "'";
  const TensorEntry* state_entry = find_state(file, weight_name);
  if (!state_entry) refuse_quant4(where, "no quant_state tensor: the weight is not 4-bit");
  const Tensor state_bytes = file.tensor(*state_entry);
  if (state_bytes.dtype() != DType::kU8)
    refuse_quant4(where, "the quant_state tensor must be uint8");
  Quant4State state = parse_quant4_state(
      std::string_view(reinterpret_cast<const char*>(state_bytes.bytes()), state_bytes.nbytes()),
      file.path() + ": tensor '" + state_entry->name + "'");
  if (state_entry->name.substr(state_entry->name.size() - 3) !=
      ops::cpu::quant4_type_name(state.type))
    refuse_quant4(where, "the quant_state's name says " +
                             state_entry->name.substr(state_entry->name.size() - 3) +
                             ", its quant_type " +
                             std::string(ops::cpu::quant4_type_name(state.type)));
  return state;
}

Quant4Weight read_quant4_weight(const SafetensorsFile& file, const std::string& weight_name) {
  const std::string where = file.path() + ": tensor '" + weight_name + "'";
  Quant4Weight w;
  w.state = read_quant4_state(file, weight_name);

  // The packed indices: any storage dtype, read as bytes.
  const Tensor packed = file.tensor(require(file, weight_name, weight_name));
  const auto bytes_needed = static_cast<size_t>((w.numel() + 1) / 2);
  if (packed.nbytes() != bytes_needed)
    refuse_quant4(where, "holds " + std::to_string(packed.nbytes()) + " bytes; a " +
                             std::to_string(w.state.shape[0]) + " × " +
                             std::to_string(w.state.shape[1]) + " weight packs into " +
                             std::to_string(bytes_needed));
  const auto* p = reinterpret_cast<const uint8_t*>(packed.bytes());
  w.packed.assign(p, p + bytes_needed);

  const std::vector<float> table = f32_tensor(file, weight_name + ".quant_map", weight_name, 16);
  const auto& code = ops::cpu::quant4_code(w.state.type);
  if (std::memcmp(table.data(), code.data(), sizeof(float) * 16) != 0)
    refuse_quant4(where, "its quant_map is not bitsandbytes' " +
                             std::string(ops::cpu::quant4_type_name(w.state.type)) + " table");

  const auto blocks =
      static_cast<size_t>(ops::cpu::quant_block_count(w.numel(), w.state.blocksize));
  if (!w.state.nested) {
    w.absmax = f32_tensor(file, weight_name + ".absmax", weight_name, blocks);
    return w;
  }
  ops::cpu::NestedAbsmax nested;
  nested.blocksize = w.state.nested_blocksize;
  nested.offset = w.state.nested_offset;
  const Tensor codes = file.tensor(require(file, weight_name + ".absmax", weight_name));
  if (codes.dtype() != DType::kU8 || static_cast<size_t>(codes.numel()) != blocks)
    refuse_quant4(where, "nested statistics need " + std::to_string(blocks) +
                             " uint8 absmax codes, got " + std::to_string(codes.numel()) + " of " +
                             std::string(dtype_name(codes.dtype())));
  const auto c = codes.values<uint8_t>();
  nested.codes.assign(c.begin(), c.end());
  nested.absmax = f32_tensor(file, weight_name + ".nested_absmax", weight_name,
                             static_cast<size_t>(ops::cpu::quant_block_count(
                                 static_cast<int64_t>(blocks), nested.blocksize)));
  const std::vector<float> map =
      f32_tensor(file, weight_name + ".nested_quant_map", weight_name, 256);
  std::copy(map.begin(), map.end(), nested.code.begin());
  w.absmax.resize(blocks);
  ops::cpu::unnest_absmax(nested, w.absmax);
  return w;
}

}  // namespace sft::model
