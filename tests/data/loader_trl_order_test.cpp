// The loader against the rows TRL's Trainer actually visits (tests/fixtures/sampler/,
// tools/make_sampler_goldens.py): a real transformers Trainer.train() recording each
// micro-batch's rows over several epochs (sizes 1..70000, seeds, data_seed, batch sizes,
// drop_last, gradient accumulation), resumed from mid-epoch checkpoints, and accelerate's
// per-rank shards for several world sizes.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "data/loader.h"
#include "order_golden.h"
#include "test_paths.h"

namespace sft::data {
namespace {

Json golden(const std::string& name) {
  return read_json_file(test::source_path("tests/fixtures/sampler/" + name), "test");
}

using test::expect_order;

LoaderOptions options_of(const Json& c) {
  LoaderOptions o;
  o.seed = c.at("data_seed").is_null() ? c.at("seed").get<uint64_t>()
                                       : c.at("data_seed").get<uint64_t>();
  o.batch_size = c.at("batch_size").get<uint32_t>();
  o.drop_last = c.at("drop_last").get<bool>();
  if (c.contains("world_size")) o.world_size = c.at("world_size").get<uint32_t>();
  return o;
}

// One process: the last batch of an epoch is short, as Trainer::next_rows makes it.
std::vector<uint64_t> next_single(Loader& loader, uint64_t num_rows) {
  const uint64_t before = loader.cursor().position;
  std::vector<uint64_t> rows = loader.next_batch();
  if (num_rows - before < rows.size()) rows.resize(num_rows - before);
  return rows;
}

std::string name_of(const Json& c) {
  return "n=" + std::to_string(c.at("num_rows").get<uint64_t>()) +
         " bs=" + std::to_string(c.at("batch_size").get<uint64_t>()) +
         " seed=" + c.at("seed").dump() + " data_seed=" + c.at("data_seed").dump() +
         (c.at("drop_last").get<bool>() ? " drop_last" : "");
}

TEST(LoaderTrlOrder, EveryEpochIsTheTrainersOrder) {
  const Json g = golden("trainer.json");
  size_t checked = 0;
  for (const Json& c : g.at("cases")) {
    const uint64_t n = c.at("num_rows").get<uint64_t>();
    Loader loader(n, options_of(c));
    ASSERT_EQ(loader.steps_per_epoch(), c.at("steps_per_epoch").get<uint64_t>()) << name_of(c);
    const Json& epochs = c.at("epoch_rows");
    size_t last_batch = 0;
    for (size_t e = 0; e < epochs.size(); ++e) {
      std::vector<uint64_t> rows;
      for (uint64_t s = 0; s < loader.steps_per_epoch(); ++s) {
        const std::vector<uint64_t> b = next_single(loader, n);
        rows.insert(rows.end(), b.begin(), b.end());
        last_batch = b.size();
      }
      expect_order(epochs[e], rows, name_of(c) + " epoch " + std::to_string(e));
      ++checked;
    }
    EXPECT_EQ(last_batch, c.at("last_batch_size").get<size_t>()) << name_of(c);
  }
  EXPECT_GE(checked, 70u);
}

TEST(LoaderTrlOrder, ResumeContinuesAsTheTrainerDoes) {
  const Json g = golden("trainer.json");
  ASSERT_FALSE(g.at("resume").empty());
  for (const Json& c : g.at("resume")) {
    const uint64_t n = c.at("num_rows").get<uint64_t>();
    Loader first(n, options_of(c));
    for (uint64_t i = 0; i < c.at("micro_batches_before").get<uint64_t>(); ++i)
      next_single(first, n);
    const Json saved = first.cursor_to_json();
    Loader resumed(n, options_of(c));
    resumed.restore_from_json(saved);
    const Json& want = c.at("resumed_batches");
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_EQ(next_single(resumed, n), want[i].get<std::vector<uint64_t>>())
          << name_of(c) << " resumed batch " << i;
  }
}

TEST(LoaderTrlOrder, RanksTakeAcceleratesShards) {
  const Json g = golden("sharded.json");
  size_t checked = 0;
  for (const Json& c : g.at("cases")) {
    const uint32_t world = c.at("world_size").get<uint32_t>();
    for (uint32_t r = 0; r < world; ++r) {
      LoaderOptions o = options_of(c);
      o.rank = r;
      Loader loader(c.at("num_rows").get<uint64_t>(), o);
      const Json& epochs = c.at("ranks")[r];
      for (size_t e = 0; e < epochs.size(); ++e) {
        ASSERT_EQ(loader.steps_per_epoch(), epochs[e].size()) << name_of(c);
        for (size_t s = 0; s < epochs[e].size(); ++s)
          ASSERT_EQ(loader.next_batch(), epochs[e][s].get<std::vector<uint64_t>>())
              << name_of(c) << " world " << world << " rank " << r << " epoch " << e << " step "
              << s;
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 40u);
}

}  // namespace
}  // namespace sft::data
