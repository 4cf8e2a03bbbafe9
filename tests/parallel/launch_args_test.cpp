// The distributed flags and the --nproc_per_node re-launch command (no process started).
#include <gtest/gtest.h>

#include <algorithm>
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
  EXPECT_EQ(parse({"--zero_stage", "2"}).zero_stage, 2);
  EXPECT_THROW(parse({"--zero_stage", "4"}), Error);
  // ZeRO-3 on one data-parallel rank (whatever mpirun this binary runs under).
  EXPECT_THROW(parse({"--accelerate_config", "zero3", "--nproc_per_node", "1"}), Error);
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

TEST(Launch, MpirunKeepsOffTheTerminal) {
  // In its own process group (the launcher forwards Ctrl-C), mpirun must not read the terminal.
  unsetenv("SFT_MPIRUN");
  const std::vector<std::string> cmd = mpirun_command(2, "/x/sft", {});
  const auto stdin_flag = std::find(cmd.begin(), cmd.end(), "--stdin");
  ASSERT_NE(stdin_flag, cmd.end());
  EXPECT_EQ(*(stdin_flag + 1), "none");
}

TEST(Launch, TheResumeCommandRepeatsTheLaunch) {
  using W = std::vector<std::string>;
  const W args = {"--output_dir", "out", "--max_steps", "5"};
  EXPECT_EQ(launch_words_from("train", args, {}, 0, 1), (W{"sft", "train"}));
  // --nproc_per_node: the flag the user gave, not the mpirun the launcher ran.
  EXPECT_EQ(launch_words_from("train", args, {"mpirun", "-np", "2", "/x/sft", "train"}, 2, 2),
            (W{"sft", "train", "--nproc_per_node", "2"}));
  // The user's mpirun: its words as typed, up to the program.
  W parent = {"mpirun", "-np", "2", "--hostfile", "h", "build/sft", "train"};
  parent.insert(parent.end(), args.begin(), args.end());
  EXPECT_EQ(launch_words_from("train", args, parent, 0, 2),
            (W{"mpirun", "-np", "2", "--hostfile", "h", "build/sft", "train"}));
  // A parent that is not this launch (another host's orted, srun): mpirun -np N.
  EXPECT_EQ(launch_words_from("train", args, {"orted", "-mca", "x"}, 0, 3),
            (W{"mpirun", "-np", "3", "sft", "train"}));
  W other = parent;
  other.back() = "6";  // other flags
  EXPECT_EQ(launch_words_from("train", args, other, 0, 2),
            (W{"mpirun", "-np", "2", "sft", "train"}));
  for (const W& words :
       {launch_words_from("train", args, parent, 0, 2), launch_words_from("train", args, {}, 2, 2)})
    for (const std::string& w : words) EXPECT_EQ(w.find("world_size"), std::string::npos) << w;
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
