// The Qwen3 shapes the benchmarks measure, as ModelConfigs (random weights; tools/bench_e2e_lib.py
// has the same shapes for the end-to-end runs): Qwen/Qwen3-0.6B's config (hidden 1024,
// intermediate 3072, 16 heads / 8 kv heads of 128, vocabulary 151936, tied) and the 103M shape
// (hidden 512, intermediate 1536, 8 / 4 heads of 64, 8 layers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "model/config.h"

namespace sft::bench {

inline ModelConfig qwen3_shape(const std::string& name, int64_t layers = 0) {
  const bool small = name == "103m";
  ModelConfig c;
  c.model_type = ModelType::kQwen3;
  c.vocab_size = 151936;
  c.hidden_size = small ? 512 : 1024;
  c.intermediate_size = small ? 1536 : 3072;
  c.num_hidden_layers = layers > 0 ? layers : small ? 8 : 28;
  c.num_attention_heads = small ? 8 : 16;
  c.num_key_value_heads = small ? 4 : 8;
  c.head_dim = small ? 64 : 128;
  c.qk_norm = true;
  c.tie_word_embeddings = true;
  c.rope.theta = 1000000.0;
  c.max_position_embeddings = 40960;
  c.layer_sliding_window.assign(static_cast<size_t>(c.num_hidden_layers), false);
  return c;
}

}  // namespace sft::bench
