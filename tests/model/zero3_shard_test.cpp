// A ZeRO-3 rank's shard of the model (ParameterSet::hold_only, model/held_values.h): drawn by
// Transformer::random or read by Transformer::load (dense and expert checkpoints, f32 / bf16,
// one file and sharded), its values are, bit for bit, the whole model's in the held run and
// zero elsewhere; the bf16 copies likewise; and the pages outside the run are never touched.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "model/tp_test_models.h"
#include "test_paths.h"

namespace sft::model {

namespace {

// How many elements break the rule: the whole model's bits inside the held run, zero outside.
template <typename T>
size_t off_shard(const T* shard, const T* whole, int64_t n, ElementRun held) {
  const T zero{};
  size_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    const bool in = i >= held.begin && i < held.end;
    bad += std::memcmp(&shard[i], in ? &whole[i] : &zero, sizeof(T)) != 0;
  }
  return bad;
}

void expect_share_of(const Transformer& shard, const Transformer& whole, const std::string& what) {
  const ParameterSet& s = shard.params();
  const ElementRun held = s.held();
  EXPECT_FALSE(s.holds_all()) << what;
  EXPECT_EQ(off_shard(s.values().data(), whole.params().values().data(), s.numel(), held), 0u)
      << what << ": values outside [" << held.begin << ", " << held.end << ")";
}

}  // namespace

TEST(Zero3Shard, RandomShardIsTheWholeModelsShare) {
  for (bool tied : {false, true}) {
    const ModelConfig config = test::tp_tiny_config(/*biases=*/true, tied);
    const Transformer whole = Transformer::random(config, 11, 0.5f);
    for (int ranks : {2, 3})
      for (int r = 0; r < ranks; ++r) {
        const Transformer shard = Transformer::random(config, 11, 0.5f, {}, {r, ranks});
        EXPECT_EQ(shard.params().held().begin, whole.params().numel() * r / ranks);
        expect_share_of(shard, whole,
                        "random rank " + std::to_string(r) + " of " + std::to_string(ranks) +
                            (tied ? ", tied" : ""));
      }
  }
}

TEST(Zero3Shard, LoadReadsOnlyTheShard) {
  for (const char* fixture : {"models/llama", "models/qwen3_sharded", "models/qwen3_bf16",
                              "trainer_moe/model", "trainer_moe_gpt_oss/model"}) {
    const std::string dir = test::source_path(std::string("tests/fixtures/") + fixture);
    const Transformer whole = Transformer::load(dir);
    for (int r = 0; r < 3; ++r)
      expect_share_of(Transformer::load(dir, {}, {r, 3}), whole,
                      std::string(fixture) + " rank " + std::to_string(r));
  }
}

TEST(Zero3Shard, Bf16CopiesOfTheShardAreTheWholeModels) {
  const ModelConfig config = test::tp_tiny_config(false, /*tied=*/true);
  Transformer whole = Transformer::random(config, 5, 0.5f);
  whole.set_compute_dtype(DType::kBF16);
  Transformer shard = Transformer::random(config, 5, 0.5f, {}, {1, 2});
  shard.set_compute_dtype(DType::kBF16);
  const ElementRun held = shard.params().held();
  EXPECT_EQ(off_shard(shard.params().bf16_arena(), whole.params().bf16_arena(),
                      shard.params().numel(), held),
            0u);
}

// A shard of a 4.7 M-parameter model: the whole pages of its values arena outside the held
// run are not resident (mincore), so a rank holds its shard, not the model.
TEST(Zero3Shard, PagesOutsideTheShardAreNeverTouched) {
  ModelConfig config = test::tp_tiny_config(false, false);
  config.vocab_size = 8192;
  config.hidden_size = 256;
  config.intermediate_size = 512;
  config.num_attention_heads = 4;
  config.num_key_value_heads = 2;
  config.head_dim = 64;
  Transformer shard = Transformer::random(config, 3, 0.02f, {}, {1, 4});
  shard.set_compute_dtype(DType::kBF16);
  ParameterSet& s = shard.params();
  const ElementRun held = s.held();
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  auto resident_outside = [&](const void* base, size_t elem) {
    const uintptr_t b = reinterpret_cast<uintptr_t>(base);
    const uintptr_t first = (b + page - 1) / page * page;
    const uintptr_t last = (b + static_cast<size_t>(s.numel()) * elem) / page * page;
    std::vector<unsigned char> in((last - first) / page);
    EXPECT_EQ(mincore(reinterpret_cast<void*>(first), last - first, in.data()), 0);
    size_t count = 0;
    for (size_t k = 0; k < in.size(); ++k) {
      const uintptr_t lo = first + k * page, hi = lo + page;  // the page's elements
      const bool overlaps_held = hi > b + static_cast<size_t>(held.begin) * elem &&
                                 lo < b + static_cast<size_t>(held.end) * elem;
      count += (in[k] & 1) && !overlaps_held;
    }
    return count;
  };
  EXPECT_EQ(resident_outside(s.values().data(), sizeof(float)), 0u);
  EXPECT_EQ(resident_outside(s.bf16_arena(), sizeof(uint16_t)), 0u);
}

TEST(Zero3Shard, HoldOnlyIsForAFreshSet) {
  Transformer m = Transformer::random(test::tp_tiny_config(false, false), 1, 0.5f);
  m.set_compute_dtype(DType::kBF16);
  try {
    m.params().hold_only({0, 10});
    FAIL() << "hold_only after the bf16 copies exist";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[model] hold_only: only a fresh"), std::string::npos)
        << e.what();
  }
  try {
    Transformer::random(test::tp_tiny_config(false, false), 1, 0.5f, {}, {0, 1})
        .params()
        .hold_only({5, 4});
    FAIL() << "an empty run";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is not inside the"), std::string::npos) << e.what();
  }
}

}  // namespace sft::model
