// Tensor-parallel slices of a model (T = 2, 4 ranks as threads): Transformer::random's and
// Transformer::load's slices are, bit for bit, the blocks (copy_block) of the unsplit model,
// for every fixture dtype (F32, BF16, F16; one file and sharded) and every kind of split.
#include <gtest/gtest.h>

#include <string>

#include "model/tp_test_models.h"
#include "test_paths.h"
#include "thread_shard_group.h"

namespace sft::model {

namespace {

struct Variant {
  bool biases, tied;
};
constexpr Variant kVariants[] = {{false, false}, {true, false}, {true, true}};

}  // namespace

TEST(TensorParallelSlices, RandomSlicesAreBlocksOfTheUnsplitModel) {
  for (const Variant& v : kVariants) {
    const ModelConfig config = test::tp_tiny_config(v.biases, v.tied);
    const Transformer whole = Transformer::random(config, 11, 0.5f);
    for (int T : {2, 4}) {
      testing::ThreadShardGroups::run(T, [&](ShardGroup& group) {
        const Transformer local = Transformer::random(config, 11, 0.5f, TensorParallel::of(&group));
        EXPECT_LT(local.params().numel(), whole.num_parameters());
        test::expect_blocks_of(local, whole, "random, T=" + std::to_string(T));
      });
    }
  }
}

// Every split kind appears: rows (q, k, v, gate, up, embedding, LM head, q/k/v biases),
// columns (o, down) and replicated (norms, o/down biases).
TEST(TensorParallelSlices, TheTinyConfigHasEverySplitKind) {
  bool rows = false, cols = false, vector_rows = false, replicated = false;
  for (const ParamSpec& p : parameter_layout(test::tp_tiny_config(true, false), 1, 4)) {
    rows |= p.tp_dim == 0 && p.shape.size() == 2;
    vector_rows |= p.tp_dim == 0 && p.shape.size() == 1;
    cols |= p.tp_dim == 1;
    replicated |= p.tp_dim < 0;
  }
  EXPECT_TRUE(rows && cols && vector_rows && replicated);
}

TEST(TensorParallelSlices, LoadReadsEachRanksBlockOfTheFiles) {
  for (const char* fixture : {"llama", "mistral", "qwen2", "qwen3_sharded", "qwen3_bf16"}) {
    const std::string dir = test::source_path(std::string("tests/fixtures/models/") + fixture);
    const Transformer whole = Transformer::load(dir);
    testing::ThreadShardGroups::run(2, [&](ShardGroup& group) {
      const Transformer local = Transformer::load(dir, TensorParallel::of(&group));
      test::expect_blocks_of(local, whole, std::string("load ") + fixture);
    });
  }
}

}  // namespace sft::model
