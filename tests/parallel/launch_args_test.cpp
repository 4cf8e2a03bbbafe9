// The distributed flags and the --nproc_per_node re-launch command (no process started).
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/error.h"
#include "parallel/groups.h"
#include "parallel/launch.h"
#include "train/args.h"

namespace sft {
namespace {

TrainingArgs parse(std::vector<std::string> extra) {
  std::vector<std::string> t = {"--model_name_or_path", "m", "--dataset_name", "d",
                                "--output_dir",         "o"};
  t.insert(t.end(), extra.begin(), extra.end());
  return parse_training_args(t);
}

TEST(DistributedArgs, AccelerateZero1IsStageOne) {
  EXPECT_EQ(parse({}).zero_stage, 0);
  EXPECT_EQ(parse({"--accelerate_config", "zero1"}).zero_stage, 1);
  EXPECT_EQ(parse({"--zero_stage", "1"}).zero_stage, 1);
  EXPECT_EQ(parse({"--accelerate_config", "multi_gpu"}).zero_stage, 0);
  EXPECT_EQ(parse({"--ddp_timeout", "5"}).ddp_timeout, 5);
}

TEST(DistributedArgs, OtherStagesAndBadSizesAreRefused) {
  EXPECT_THROW(parse({"--zero_stage", "2"}), Error);
  EXPECT_THROW(parse({"--accelerate_config", "zero3"}), Error);
  EXPECT_THROW(parse({"--tp_size", "0"}), Error);
  EXPECT_THROW(parse({"--tp_size", "2", "--use_peft", "true"}), Error);  // LoRA is not split
  EXPECT_THROW(parse({"--ddp_timeout", "-1"}), Error);
  EXPECT_THROW(parse({"--nproc_per_node", "0"}), Error);
}

TEST(DistributedArgs, TensorParallelSizeFromTheFlagOrTrlsEnvironment) {
  EXPECT_EQ(parse({"--tp_size", "2"}).tp_size, 2);
  setenv("TP_SIZE", "4", 1);
  EXPECT_EQ(parse({}).tp_size, 4);  // TRL's TP_SIZE, read when the flag is not given
  EXPECT_EQ(parse({"--tp_size", "2"}).tp_size, 2);
  unsetenv("TP_SIZE");
}

TEST(Launch, DropsTheFlagAndRunsMpirun) {
  EXPECT_EQ(without_nproc_flag({"--a", "1", "--nproc_per_node", "4", "--b", "--nproc_per_node=2"}),
            (std::vector<std::string>{"--a", "1", "--b"}));
  unsetenv("SFT_MPIRUN");
  const std::vector<std::string> cmd = mpirun_command(4, "/x/sft", {"--a", "1"});
  ASSERT_GE(cmd.size(), 7u);
  EXPECT_EQ(cmd[0], "mpirun");
  EXPECT_EQ(cmd[1], "-np");
  EXPECT_EQ(cmd[2], "4");
  EXPECT_EQ(cmd[cmd.size() - 4], "/x/sft");
  EXPECT_EQ(cmd[cmd.size() - 3], "train");
}

TEST(ParallelGroups, TpOfOneMakesTheDataParallelGroupTheWorld) {
  std::unique_ptr<Comm> local = make_local_comm();
  ParallelGroups g = make_parallel_groups(*local, 1);
  EXPECT_EQ(g.dp->size(), 1);
  EXPECT_EQ(g.tp->size(), 1);
  EXPECT_THROW(make_parallel_groups(*local, 0), Error);
}

}  // namespace
}  // namespace sft
