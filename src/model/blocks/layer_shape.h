// LayerShape: the sizes a decoder layer's blocks carve their memory for — one rank's share of
// one layer over T tokens. Every block's carve_saved / carve_scratch reads it, so a block never
// looks at ModelConfig again after the layer is bound.
// Dimensions: T tokens, C hidden, I intermediate, H heads, Hkv kv heads, D head dim.
#pragma once

#include <cstdint>

#include "core/arena.h"
#include "core/dtype.h"
#include "model/config.h"
#include "ops/view.h"

namespace sft::model {

struct LayerShape {
  int64_t T = 0, C = 0, I = 0, H = 0, Hkv = 0, D = 0;
  bool qk_norm = false;
  DType compute = DType::kF32;  // kF32 or kBF16
  bool post_norms = false;      // the layers keep their branches' outputs for the post norms
  bool sinks = false;           // attention sinks (under bf16: an fp32 attention output)
  double softcap = 0;           // the attention scores' soft-cap (its backward keeps 1 − tanh²)
  bool qk_norm_over_projection = false;  // one rstd per token, not per head
  // Mixture of experts (blocks/moe_block.h): E experts, k per token, each of intermediate Ie;
  // the layer carves the dense MLP's memory, the experts', or (a shape that serves every
  // layer: one set under gradient checkpointing, decoding, the shared scratch) both.
  int64_t E = 0, K = 0, Ie = 0;
  bool dense_mlp = true, moe_mlp = false;
  // Expert parallelism with the exchange on: the experts' rows (gate, up, h and their f32 and
  // gradient buffers) live in the ExpertParallel's arenas (model/expert_parallel.h), sized by
  // the rows received, so the layer carves only the routing, xs, ys and their gradients.
  bool expert_rows_elsewhere = false;
  // The shape of layer `layer` alone: only the MLP it has.
  LayerShape for_layer(const ModelConfig& config, int64_t layer) const;
  int64_t routed_rows() const { return T * K; }  // R: the (token, expert) pairs
  // This rank's share under tensor parallelism: I, H and Hkv divided by tp_size.
  static LayerShape of(const ModelConfig& config, int64_t tokens, DType compute, int tp_size = 1);

  int64_t q_width() const { return H * D; }     // (T, H·D)
  int64_t kv_width() const { return Hkv * D; }  // (T, Hkv·D)
  bool bf16() const { return compute == DType::kBF16; }
};

// A (rows, cols) view of `dtype` taken from the carver (null while carve() measures).
ops::View take_view(Carver& cv, DType dtype, int64_t rows, int64_t cols);
inline ops::View take_f32(Carver& cv, int64_t rows, int64_t cols) {
  return take_view(cv, DType::kF32, rows, cols);
}

}  // namespace sft::model
