#include "train/trainer_state.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "core/error.h"
#include "test_paths.h"

namespace sft {

namespace {
std::string read(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
}  // namespace

// Reading transformers' file and writing it back gives the same bytes.
TEST(TrainerState, RoundTripsTransformersFileByteForByte) {
  const std::string golden_dir = test::source_path("tests/fixtures/train");
  TrainerState state = load_trainer_state(golden_dir);
  EXPECT_EQ(state.global_step, 3);
  EXPECT_EQ(state.train_batch_size, 8);
  ASSERT_EQ(state.log_history.size(), 3u);
  EXPECT_DOUBLE_EQ(state.log_history[1]["learning_rate"].get<double>(), 1.6666666666666667e-05);
  const std::string out = test::fresh_output_dir("trainer_state");
  save_trainer_state(state, out);
  EXPECT_EQ(read(out + "/trainer_state.json"), read(golden_dir + "/trainer_state.json"));
}

TEST(TrainerState, BadFileIsAClearError) {
  EXPECT_THROW(trainer_state_from_json(Json::array(), "x/trainer_state.json"), Error);
  EXPECT_THROW(trainer_state_from_json(Json{{"global_step", "three"}}, "x/trainer_state.json"),
               Error);
}

}  // namespace sft
