// Tiny configs that split over 2 and 4 tensor-parallel ranks, and the bit-exact comparison of
// a rank's slices with the blocks of the unsplit model (tests of tensor-parallel slices).
#pragma once

#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/param_slices.h"
#include "model/transformer.h"

namespace sft::test {

// 8 heads, 4 kv heads (head_dim 4), intermediate 32, vocab 64: every split divides by 2 and 4.
// A Llama; `biases` adds attention_bias (q/k/v biases, split; o bias, replicated) and mlp_bias
// (gate/up split, down replicated); `tied` shares the embedding with the LM head. Exported,
// its config.json describes the same parameters.
inline ModelConfig tp_tiny_config(bool biases, bool tied) {
  ModelConfig c;
  c.model_type = ModelType::kLlama;
  c.vocab_size = 61;
  c.hidden_size = 32;
  c.intermediate_size = 32;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 8;
  c.num_key_value_heads = 4;
  c.head_dim = 4;
  c.max_position_embeddings = 64;
  c.tie_word_embeddings = tied;
  c.qkv_bias = c.o_bias = c.mlp_bias = biases;
  c.layer_sliding_window.assign(size_t(c.num_hidden_layers), false);  // as parse_model_config
  return c;
}

// The same with a vocabulary of 61 rows, which divides by neither 2 nor 4: the padded split
// (tensor_parallel.h) gives 31 rows a rank over 2 (rank 1: 30 real, 1 padding) and 16 over 4
// (rank 3: 13 real, 3 padding).
inline ModelConfig tp_odd_vocab_config(bool biases, bool tied) {
  ModelConfig c = tp_tiny_config(biases, tied);
  c.vocab_size = 61;
  return c;
}

inline std::vector<uint32_t> float_bits(const float* v, size_t n) {
  std::vector<uint32_t> out(n);
  std::memcpy(out.data(), v, n * sizeof(float));
  return out;
}

// Every parameter of `local` (a rank's slices) is, bit for bit, copy_block of the same
// parameter of `whole`; the specs agree on names and whole shapes.
inline void expect_blocks_of(const model::Transformer& local, const model::Transformer& whole,
                             const std::string& what) {
  const auto slices = local.params().all();
  const auto full = whole.params().all();
  ASSERT_EQ(slices.size(), full.size()) << what;
  for (size_t i = 0; i < slices.size(); ++i) {
    const ParamSpec& spec = slices[i].spec;
    ASSERT_EQ(spec.name, full[i].spec.name) << what;
    ASSERT_EQ(spec.full_shape, full[i].spec.shape) << what << " " << spec.name;
    const size_t n = static_cast<size_t>(shape_numel(spec.shape));
    std::vector<float> want(n);
    model::copy_block(spec, full[i].value.as<float>(), want.data());
    EXPECT_EQ(float_bits(slices[i].value.as<float>(), n), float_bits(want.data(), n))
        << what << ": " << spec.name << " on rank " << local.tensor_parallel().rank << " of "
        << local.tensor_parallel().size;
  }
}

}  // namespace sft::test
