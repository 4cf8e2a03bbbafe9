// Parsing bitsandbytes' quant_state. See quant4_state.h.
#include "model/quant4_state.h"

#include <cmath>
#include <limits>

#include "core/error.h"
#include "io/json.h"

namespace sft::model {

void refuse_quant4(const std::string& where, const std::string& what) {
  fail("quant", where + ": " + what +
                    " (hint: sft reads 4-bit checkpoints as transformers' save_pretrained writes "
                    "them with bitsandbytes; re-save the model that way, or use the unquantized "
                    "model)");
}

namespace {

int64_t positive_int(const Json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) refuse_quant4(where, std::string("quant_state has no \"") + key + "\"");
  const Json& v = j.at(key);
  // (At most 2^31: bitsandbytes' blocksizes are 64 to 4096, and block counts must not overflow.)
  if (!v.is_number_integer() || v.get<int64_t>() <= 0 || v.get<int64_t>() > (int64_t{1} << 31))
    refuse_quant4(where, std::string("quant_state \"") + key +
                             "\" must be a positive integer up to 2^31, got " + v.dump());
  return v.get<int64_t>();
}

std::string string_field(const Json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || !j.at(key).is_string())
    refuse_quant4(where, std::string("quant_state needs a string \"") + key + "\"");
  return j.at(key).get<std::string>();
}

}  // namespace

Quant4State parse_quant4_state(std::string_view json, const std::string& where) {
  const Json j = parse_json_strict(json, "quant", where);
  if (!j.is_object())
    refuse_quant4(where, "quant_state must be a JSON object, got " + json_type_name(j));
  Quant4State s;
  const std::string type = string_field(j, "quant_type", where);
  if (type == "nf4")
    s.type = ops::cpu::Quant4Type::kNf4;
  else if (type == "fp4")
    s.type = ops::cpu::Quant4Type::kFp4;
  else
    refuse_quant4(where,
                  "quant_type '" + type + "' is not a 4-bit type bitsandbytes writes (nf4, fp4)");
  s.blocksize = positive_int(j, "blocksize", where);
  s.dtype = string_field(j, "dtype", where);
  if (s.dtype != "float32" && s.dtype != "bfloat16" && s.dtype != "float16")
    refuse_quant4(where, "dtype '" + s.dtype + "' is not float32, bfloat16 or float16");
  if (!j.contains("shape") || !j.at("shape").is_array() || j.at("shape").size() != 2)
    refuse_quant4(where, "quant_state \"shape\" must be [out_features, in_features]");
  for (const Json& d : j.at("shape")) {
    if (!d.is_number_integer() || d.get<int64_t>() <= 0 || d.get<int64_t>() > (int64_t{1} << 31))
      refuse_quant4(where,
                    "quant_state \"shape\" holds " + d.dump() + ", not a positive dimension");
    s.shape.push_back(d.get<int64_t>());
  }
  s.nested = j.contains("nested_blocksize") || j.contains("nested_offset");
  if (s.nested) {
    s.nested_blocksize = positive_int(j, "nested_blocksize", where);
    if (string_field(j, "nested_dtype", where) != "float32")
      refuse_quant4(where, "nested_dtype must be float32 (bitsandbytes' nested absmax)");
    if (!j.contains("nested_offset") || !j.at("nested_offset").is_number())
      refuse_quant4(where, "quant_state needs a number \"nested_offset\"");
    const double offset = j.at("nested_offset").get<double>();
    if (!(std::abs(offset) <= std::numeric_limits<float>::max()))
      refuse_quant4(where, "nested_offset " + j.at("nested_offset").dump() + " is not a float32");
    s.nested_offset = static_cast<float>(offset);
  }
  return s;
}

}  // namespace sft::model
