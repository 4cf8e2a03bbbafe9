// ops::lora_backward_products on the CPU (ops/ops.h): the operands checked once, then bf16 on an
// AMX CPU in one pass over g (lora_backward_amx.h), everything else as the two matmuls
// cpu::matmul runs (f32, f64, bf16 without AMX).
#include <string>

#include "core/error.h"
#include "ops/cpu/cpu_ops.h"
#include "ops/cpu/lora_backward_amx.h"
#include "ops/ops.h"

namespace sft::ops::cpu {

namespace {

std::string shape(const View& v) {
  return "(" + std::to_string(v.rows) + ", " + std::to_string(v.cols) + ")";
}

}  // namespace

void lora_backward_products(View db, View du, View g, View u, View b) {
  const int64_t N = g.rows, O = g.cols, r = u.cols;
  if (u.rows != N || b.rows != O || b.cols != r || db.rows != O || db.cols != r || du.rows != N ||
      du.cols != r)
    fail("ops", "lora_backward_products: shapes db " + shape(db) + " += gᵀ · u, du " + shape(du) +
                    " = g · b do not fit g " + shape(g) + ", u " + shape(u) + ", b " + shape(b));
  if (u.dtype != g.dtype || b.dtype != g.dtype)
    fail("ops", "lora_backward_products: g, u and b must share a dtype, got " +
                    std::string(dtype_name(g.dtype)) + ", " + std::string(dtype_name(u.dtype)) +
                    ", " + std::string(dtype_name(b.dtype)));
  if (g.dtype == DType::kBF16 && lora_backward_amx_serves()) {
    if (db.dtype != DType::kF32 || du.dtype != DType::kF32)
      fail("ops", "lora_backward_products: db and du must be f32 with bf16 operands, got " +
                      std::string(dtype_name(db.dtype)) + " and " +
                      std::string(dtype_name(du.dtype)));
    return lora_backward_amx(db.as<float>(), db.ld(), du.as<float>(), du.ld(), g.as<uint16_t>(),
                             g.ld(), u.as<uint16_t>(), u.ld(), b.as<uint16_t>(), b.ld(), N, O, r);
  }
  cpu::matmul(db, g, u, true, false, true);
  cpu::matmul(du, g, b, false, false, false);
}

}  // namespace sft::ops::cpu
