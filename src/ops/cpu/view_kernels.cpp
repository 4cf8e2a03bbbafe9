// The CPU backend's kernels on views (ops/cpu/cpu_ops.h, the slots of ops/cpu/kernel_table.cpp):
// each checks its views' dtypes and shapes, then calls the typed CPU kernel (fp32, bf16 where
// ops.h takes bf16, or fp64 for the reference and conformance runs). The dispatcher
// (ops/dispatch.cpp) has already checked that the views are CPU views.
#include <cstring>
#include <string>

#include "ops/cpu/cpu_ops.h"
#include "ops/cpu/elementwise.h"
#include "ops/cpu/embedding.h"
#include "ops/cpu/gelu_tanh_gated.h"
#include "ops/cpu/lora_backward_amx.h"
#include "ops/cpu/rmsnorm.h"
#include "ops/cpu/rope.h"
#include "ops/cpu/swiglu.h"
#include "ops/ops.h"

namespace sft::ops::cpu {

namespace {

// `what` builds the message only on failure: the checks run on every call of the step loop.
template <typename What>
void require(bool ok, const char* op, What&& what) {
  if (!ok) fail("ops", std::string(op) + ": " + what());
}

std::string shape(const View& v) {
  return "(" + std::to_string(v.rows) + ", " + std::to_string(v.cols) + ")";
}

// Calls f(T{}) with T the element type of an f32 or f64 view, once every other view given
// has that dtype too.
template <typename F>
void on_float_type(const char* op, const View& v, std::initializer_list<View> others, F&& f) {
  for (const View& o : others)
    if (!o.empty() && o.dtype != v.dtype)
      fail("ops", std::string(op) + ": views of mixed dtypes (" + std::string(dtype_name(v.dtype)) +
                      " and " + std::string(dtype_name(o.dtype)) + ")");
  if (v.dtype == DType::kF32) return f(float{});
  if (v.dtype == DType::kF64) return f(double{});
  fail("ops", std::string(op) + ": no kernel for " + std::string(dtype_name(v.dtype)));
}

// The mixed-precision form of an elementwise op: bf16 saved inputs, fp32 everything else.
void require_bf16_inputs_f32_outputs(const char* op, std::initializer_list<View> bf16,
                                     std::initializer_list<View> f32) {
  for (const View& v : bf16)
    if (v.dtype != DType::kBF16)
      fail("ops", std::string(op) + ": views of mixed dtypes (bf16 and " +
                      std::string(dtype_name(v.dtype)) + " inputs)");
  for (const View& v : f32)
    if (v.dtype != DType::kF32)
      fail("ops", std::string(op) + ": bf16 inputs need f32 outputs and gradients, got " +
                      std::string(dtype_name(v.dtype)));
}

// The fused forms that write bf16 (the rounding of the f32 result, in the same pass): every
// view in `views` must have dtype `want`.
void require_dtype_of(const char* op, const char* role, DType want,
                      std::initializer_list<View> views) {
  for (const View& v : views)
    if (v.dtype != want)
      fail("ops", std::string(op) + ": " + role + " must be " + std::string(dtype_name(want)) +
                      ", got " + std::string(dtype_name(v.dtype)));
}

}  // namespace

void matmul(View c, View a, View b, bool trans_a, bool trans_b, bool accumulate) {
  const int64_t M = trans_a ? a.cols : a.rows, K = trans_a ? a.rows : a.cols;
  const int64_t Kb = trans_b ? b.cols : b.rows, N = trans_b ? b.rows : b.cols;
  require(K == Kb && c.rows == M && c.cols == N, "matmul", [&] {
    return "shapes " + shape(c) + " = " + shape(a) + (trans_a ? "ᵀ" : "") + " · " + shape(b) +
           (trans_b ? "ᵀ" : "") + " do not fit";
  });
  if (a.dtype == DType::kBF16 && b.dtype == DType::kBF16) {
    require(c.dtype == DType::kF32, "matmul", [&] {
      return "a bf16 product accumulates into f32, not " + std::string(dtype_name(c.dtype));
    });
    return ops::matmul_bf16(c.as<float>(), a.as<uint16_t>(), b.as<uint16_t>(), M, N, K, trans_a,
                            trans_b, accumulate, a.ld(), b.ld(), c.ld());
  }
  on_float_type("matmul", c, {a, b}, [&](auto t) {
    using T = decltype(t);
    ops::matmul(c.as<T>(), a.as<T>(), b.as<T>(), M, N, K, trans_a, trans_b, accumulate, a.ld(),
                b.ld(), c.ld());
  });
}

// bf16 on an AMX CPU: both products in one pass over g (lora_backward_amx.h); everything else
// (f32, f64, bf16 without AMX) as the two matmuls.
void lora_backward_products(View db, View du, View g, View u, View b) {
  const int64_t N = g.rows, O = g.cols, r = u.cols;
  require(u.rows == N && b.rows == O && b.cols == r && db.rows == O && db.cols == r &&
              du.rows == N && du.cols == r,
          "lora_backward_products", [&] {
            return "shapes db " + shape(db) + " += gᵀ · u, du " + shape(du) +
                   " = g · b do not fit g " + shape(g) + ", u " + shape(u) + ", b " + shape(b);
          });
  require(u.dtype == g.dtype && b.dtype == g.dtype, "lora_backward_products", [&] {
    return "g, u and b must share a dtype, got " + std::string(dtype_name(g.dtype)) + ", " +
           std::string(dtype_name(u.dtype)) + ", " + std::string(dtype_name(b.dtype));
  });
  if (g.dtype == DType::kBF16 && lora_backward_amx_serves()) {
    require_dtype_of("lora_backward_products", "db and du (with bf16 operands)", DType::kF32,
                     {db, du});
    return lora_backward_amx(db.as<float>(), db.ld(), du.as<float>(), du.ld(), g.as<uint16_t>(),
                             g.ld(), u.as<uint16_t>(), u.ld(), b.as<uint16_t>(), b.ld(), N, O, r);
  }
  cpu::matmul(db, g, u, true, false, true);
  cpu::matmul(du, g, b, false, false, false);
}

void rmsnorm_forward(View out, View rstd, View x, View w, double eps) {
  require(out.numel() == x.numel() && rstd.numel() == x.rows && w.numel() == x.cols, "rmsnorm",
          [&] { return "x " + shape(x) + ", out " + shape(out) + ", w " + shape(w); });
  if (out.dtype == DType::kBF16 && x.dtype == DType::kF32) {  // fused with the bf16 rounding
    require_dtype_of("rmsnorm", "x, rstd and w of a bf16 out", DType::kF32, {x, rstd, w});
    return cpu::rmsnorm_forward_bf16(out.as<uint16_t>(), rstd.as<float>(), x.as<float>(),
                                     w.as<float>(), x.rows, x.cols, eps);
  }
  on_float_type("rmsnorm", x, {out, rstd, w}, [&](auto t) {
    using T = decltype(t);
    cpu::rmsnorm_forward(out.as<T>(), rstd.as<T>(), x.as<T>(), w.as<T>(), x.rows, x.cols, eps);
  });
}

void add_rmsnorm_forward(View sum, View out, View rstd, View a, View b, View w, double eps) {
  require(sum.numel() == a.numel() && b.numel() == a.numel() && out.numel() == a.numel() &&
              rstd.numel() == a.rows && w.numel() == a.cols,
          "add_rmsnorm_forward", [&] {
            return "a " + shape(a) + ", b " + shape(b) + ", sum " + shape(sum) + ", out " +
                   shape(out) + ", w " + shape(w);
          });
  require(sum.dtype == a.dtype && b.dtype == a.dtype, "add_rmsnorm_forward", [&] {
    return "the residual add takes sum, a and b of one dtype, got " +
           std::string(dtype_name(sum.dtype)) + " = " + std::string(dtype_name(a.dtype)) + " + " +
           std::string(dtype_name(b.dtype));
  });
  if (out.dtype == DType::kBF16 && a.dtype == DType::kF32) {  // fused with the bf16 rounding
    require_dtype_of("add_rmsnorm_forward", "sum, a, b, rstd and w of a bf16 out", DType::kF32,
                     {sum, b, rstd, w});
    return cpu::add_rmsnorm_forward(sum.as<float>(), out.as<uint16_t>(), rstd.as<float>(),
                                    a.as<float>(), b.as<float>(), w.as<float>(), a.rows, a.cols,
                                    eps);
  }
  on_float_type("add_rmsnorm_forward", a, {sum, out, rstd, b, w}, [&](auto t) {
    using T = decltype(t);
    cpu::add_rmsnorm_forward(sum.as<T>(), out.as<T>(), rstd.as<T>(), a.as<T>(), b.as<T>(),
                             w.as<T>(), a.rows, a.cols, eps);
  });
}

void rmsnorm_backward(View dx, View dw, View dout, View x, View rstd, View w) {
  require(
      dx.numel() == x.numel() && dout.numel() == x.numel() && (dw.empty() || dw.numel() == x.cols),
      "rmsnorm_backward",
      [&] { return "x " + shape(x) + ", dx " + shape(dx) + ", dw " + shape(dw); });
  on_float_type("rmsnorm_backward", x, {dx, dw, dout, rstd, w}, [&](auto t) {
    using T = decltype(t);
    cpu::rmsnorm_backward(dx.as<T>(), dw.empty() ? nullptr : dw.as<T>(), dout.as<T>(), x.as<T>(),
                          rstd.as<T>(), w.as<T>(), x.rows, x.cols);
  });
}

namespace {
void rope(View x, View cos, View sin, int64_t head_dim, bool backward) {
  const int64_t R = 2 * cos.cols, D = head_dim > 0 ? head_dim : R;
  require(cos.rows == x.rows && sin.numel() == cos.numel() && R > 0 && R <= D && x.cols % D == 0,
          "rope", [&] {
            return "x " + shape(x) + ", cos " + shape(cos) + ", head dim " + std::to_string(D);
          });
  on_float_type("rope", x, {cos, sin}, [&](auto t) {
    using T = decltype(t);
    if (backward)
      cpu::rope_backward(x.as<T>(), cos.as<T>(), sin.as<T>(), x.rows, x.cols / D, D, x.ld(), R);
    else
      cpu::rope_forward(x.as<T>(), cos.as<T>(), sin.as<T>(), x.rows, x.cols / D, D, x.ld(), R);
  });
}
}  // namespace

void rope_forward(View x, View cos, View sin, int64_t head_dim) {
  rope(x, cos, sin, head_dim, false);
}

void rope_backward(View dx, View cos, View sin, int64_t head_dim) {
  rope(dx, cos, sin, head_dim, true);
}

void swiglu_forward(View h, View gate, View up) {
  require(h.numel() == gate.numel() && up.numel() == gate.numel(), "swiglu",
          [&] { return "gate " + shape(gate) + ", up " + shape(up) + ", h " + shape(h); });
  if (gate.dtype == DType::kBF16 && h.dtype == DType::kBF16) {  // fused with h's rounding
    require_dtype_of("swiglu", "gate and up of a bf16 h", DType::kBF16, {up});
    return cpu::swiglu_forward_bf16(h.as<uint16_t>(), gate.as<uint16_t>(), up.as<uint16_t>(),
                                    gate.numel());
  }
  if (gate.dtype == DType::kBF16) {  // bf16 compute: bf16 gate and up, fp32 h
    require_bf16_inputs_f32_outputs("swiglu", {gate, up}, {h});
    return cpu::swiglu_forward(h.as<float>(), gate.as<uint16_t>(), up.as<uint16_t>(), gate.numel());
  }
  on_float_type("swiglu", gate, {h, up}, [&](auto t) {
    using T = decltype(t);
    cpu::swiglu_forward(h.as<T>(), gate.as<T>(), up.as<T>(), gate.numel());
  });
}

void swiglu_backward(View dgate, View dup, View dh, View gate, View up) {
  require(
      dh.numel() == gate.numel() && dgate.numel() == gate.numel() && dup.numel() == gate.numel(),
      "swiglu_backward", [&] { return "gate " + shape(gate) + ", dh " + shape(dh); });
  if (gate.dtype == DType::kBF16 && dgate.dtype == DType::kBF16) {  // fused with the rounding
    require_dtype_of("swiglu_backward", "gate, up and dup of a bf16 dgate", DType::kBF16,
                     {up, dup});
    require_dtype_of("swiglu_backward", "dh", DType::kF32, {dh});
    return cpu::swiglu_backward_bf16(dgate.as<uint16_t>(), dup.as<uint16_t>(), dh.as<float>(),
                                     gate.as<uint16_t>(), up.as<uint16_t>(), gate.numel());
  }
  if (gate.dtype == DType::kBF16) {
    require_bf16_inputs_f32_outputs("swiglu_backward", {gate, up}, {dgate, dup, dh});
    return cpu::swiglu_backward(dgate.as<float>(), dup.as<float>(), dh.as<float>(),
                                gate.as<uint16_t>(), up.as<uint16_t>(), gate.numel());
  }
  on_float_type("swiglu_backward", gate, {dgate, dup, dh, up}, [&](auto t) {
    using T = decltype(t);
    cpu::swiglu_backward(dgate.as<T>(), dup.as<T>(), dh.as<T>(), gate.as<T>(), up.as<T>(),
                         gate.numel());
  });
}

void gelu_tanh_gated_forward(View h, View gate, View up) {
  require(h.numel() == gate.numel() && up.numel() == gate.numel(), "gelu_tanh_gated",
          [&] { return "gate " + shape(gate) + ", up " + shape(up) + ", h " + shape(h); });
  if (gate.dtype == DType::kBF16 && h.dtype == DType::kBF16) {  // fused with h's rounding
    require_dtype_of("gelu_tanh_gated", "gate and up of a bf16 h", DType::kBF16, {up});
    return cpu::gelu_tanh_gated_forward_bf16(h.as<uint16_t>(), gate.as<uint16_t>(),
                                             up.as<uint16_t>(), gate.numel());
  }
  if (gate.dtype == DType::kBF16) {  // bf16 compute: bf16 gate and up, fp32 h
    require_bf16_inputs_f32_outputs("gelu_tanh_gated", {gate, up}, {h});
    return cpu::gelu_tanh_gated_forward(h.as<float>(), gate.as<uint16_t>(), up.as<uint16_t>(),
                                        gate.numel());
  }
  on_float_type("gelu_tanh_gated", gate, {h, up}, [&](auto t) {
    using T = decltype(t);
    cpu::gelu_tanh_gated_forward(h.as<T>(), gate.as<T>(), up.as<T>(), gate.numel());
  });
}

void gelu_tanh_gated_backward(View dgate, View dup, View dh, View gate, View up) {
  require(
      dh.numel() == gate.numel() && dgate.numel() == gate.numel() && dup.numel() == gate.numel(),
      "gelu_tanh_gated_backward", [&] { return "gate " + shape(gate) + ", dh " + shape(dh); });
  if (gate.dtype == DType::kBF16 && dgate.dtype == DType::kBF16) {  // fused with the rounding
    require_dtype_of("gelu_tanh_gated_backward", "gate, up and dup of a bf16 dgate", DType::kBF16,
                     {up, dup});
    require_dtype_of("gelu_tanh_gated_backward", "dh", DType::kF32, {dh});
    return cpu::gelu_tanh_gated_backward_bf16(dgate.as<uint16_t>(), dup.as<uint16_t>(),
                                              dh.as<float>(), gate.as<uint16_t>(),
                                              up.as<uint16_t>(), gate.numel());
  }
  if (gate.dtype == DType::kBF16) {
    require_bf16_inputs_f32_outputs("gelu_tanh_gated_backward", {gate, up}, {dgate, dup, dh});
    return cpu::gelu_tanh_gated_backward(dgate.as<float>(), dup.as<float>(), dh.as<float>(),
                                         gate.as<uint16_t>(), up.as<uint16_t>(), gate.numel());
  }
  on_float_type("gelu_tanh_gated_backward", gate, {dgate, dup, dh, up}, [&](auto t) {
    using T = decltype(t);
    cpu::gelu_tanh_gated_backward(dgate.as<T>(), dup.as<T>(), dh.as<T>(), gate.as<T>(), up.as<T>(),
                                  gate.numel());
  });
}

void embedding_forward(View out, const int64_t* ids, View table, VocabShard shard) {
  require(out.cols == table.cols, "embedding",
          [&] { return "out " + shape(out) + ", table " + shape(table); });
  if (table.dtype == DType::kBF16) {  // a frozen table held in bf16: rows widen to f32
    require(out.dtype == DType::kF32, "embedding", [&] {
      return "a bf16 table looks up into f32, not " + std::string(dtype_name(out.dtype));
    });
    if (!shard.group)
      return cpu::embedding_forward_bf16(out.as<float>(), ids, table.as<uint16_t>(), out.rows,
                                         out.cols);
    cpu::embedding_forward_shard_bf16(out.as<float>(), ids, table.as<uint16_t>(), out.rows,
                                      out.cols, shard.begin, table.rows);
    shard.group->sum(std::span<float>(out.as<float>(), static_cast<size_t>(out.numel())));
    return;
  }
  on_float_type("embedding", table, {out}, [&](auto t) {
    using T = decltype(t);
    if (!shard.group)
      return cpu::embedding_forward(out.as<T>(), ids, table.as<T>(), out.rows, out.cols);
    // Each rank writes its rows (−0 for the others' ids), the sum over the group fills in
    // the rest: one collective of (T, C), every rank the same size.
    cpu::embedding_forward_shard(out.as<T>(), ids, table.as<T>(), out.rows, out.cols, shard.begin,
                                 table.rows);
    shard.group->sum(std::span<T>(out.as<T>(), static_cast<size_t>(out.numel())));
  });
}

void embedding_backward(View dtable, View dout, const int64_t* ids, VocabShard shard) {
  require(dout.cols == dtable.cols, "embedding_backward",
          [&] { return "dout " + shape(dout) + ", dtable " + shape(dtable); });
  on_float_type("embedding_backward", dtable, {dout}, [&](auto t) {
    using T = decltype(t);
    if (!shard.group)
      return cpu::embedding_backward(dtable.as<T>(), dout.as<T>(), ids, dout.rows, dout.cols);
    cpu::embedding_backward_shard(dtable.as<T>(), dout.as<T>(), ids, dout.rows, dout.cols,
                                  shard.begin, dtable.rows);
  });
}

void add(View dst, View src, View rounded) {
  require(dst.numel() == src.numel(), "add",
          [&] { return "dst " + shape(dst) + ", src " + shape(src); });
  if (!rounded.empty()) {
    require(rounded.numel() == dst.numel(), "add",
            [&] { return "dst " + shape(dst) + ", rounded " + shape(rounded); });
    require_dtype_of("add", "dst and src beside a rounded copy", DType::kF32, {dst, src});
    require_dtype_of("add", "the rounded copy", DType::kBF16, {rounded});
    return cpu::add_rounded(dst.as<float>(), src.as<float>(), rounded.as<uint16_t>(), dst.numel());
  }
  if (dst.dtype == DType::kF32 && src.dtype == DType::kBF16)
    return cpu::add(dst.as<float>(), src.as<uint16_t>(), dst.numel());
  on_float_type("add", dst, {src}, [&](auto t) {
    using T = decltype(t);
    cpu::add(dst.as<T>(), src.as<T>(), dst.numel());
  });
}

void add_bias(View y, View b) {
  require(b.numel() == y.cols, "add_bias", [&] { return "y " + shape(y) + ", b " + shape(b); });
  on_float_type("add_bias", y, {b}, [&](auto t) {
    using T = decltype(t);
    cpu::add_bias(y.as<T>(), b.as<T>(), y.rows, y.cols);
  });
}

void bias_backward(View db, View dy) {
  require(db.numel() == dy.cols, "bias_backward",
          [&] { return "dy " + shape(dy) + ", db " + shape(db); });
  on_float_type("bias_backward", dy, {db}, [&](auto t) {
    using T = decltype(t);
    cpu::bias_backward(db.as<T>(), dy.as<T>(), dy.rows, dy.cols);
  });
}

void zero(View x) {
  if (!x.empty()) std::memset(x.data, 0, static_cast<size_t>(x.numel()) * dtype_size(x.dtype));
}

void cast(View dst, View src) {
  const bool dense = dst.dense() && src.dense();
  // Dense views only need as many elements; a column block needs the same shape.
  require(dense ? dst.numel() == src.numel() : dst.rows == src.rows && dst.cols == src.cols, "cast",
          [&] { return "dst " + shape(dst) + ", src " + shape(src); });
  const DType to = dst.dtype, from = src.dtype;
  auto run = [&](auto* d, const auto* s) {
    if (dense) return cpu::cast(d, s, src.numel());
    cpu::cast_rows(d, dst.ld(), s, src.ld(), src.rows, src.cols);
  };
  if (to == DType::kBF16 && from == DType::kF32) return run(dst.as<uint16_t>(), src.as<float>());
  if (to == DType::kF32 && from == DType::kBF16) return run(dst.as<float>(), src.as<uint16_t>());
  if (to == DType::kF64 && from == DType::kF32) return run(dst.as<double>(), src.as<float>());
  if (to == DType::kF32 && from == DType::kF64) return run(dst.as<float>(), src.as<double>());
  if (to == DType::kF32 && from == DType::kF32) return run(dst.as<float>(), src.as<float>());
  fail("ops", "cast: no kernel from " + std::string(dtype_name(from)) + " to " +
                  std::string(dtype_name(to)));
}

}  // namespace sft::ops::cpu
