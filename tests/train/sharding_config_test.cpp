// TRL's spellings of ZeRO stages (train/sharding_config.h, train/args_sharding.h): what each
// maps onto, the notices naming ignored keys, and the refusals with the file, place and hint.
#include <gtest/gtest.h>

#include <fstream>

#include "io/options.h"
#include "test_paths.h"
#include "train/args.h"
#include "train/sharding_config.h"

namespace sft {
namespace {

TrainingArgs parse(std::vector<std::string> extra) {
  std::vector<std::string> t = {"--model_name_or_path", "m", "--dataset_name", "d",
                                "--output_dir",         "o"};
  t.insert(t.end(), extra.begin(), extra.end());
  return parse_training_args(t);
}

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = test::fresh_output_dir("sharding_config_" + name) + "/" + name;
  std::ofstream(path) << text;
  return path;
}

std::string usage_error(std::vector<std::string> extra) {
  try {
    parse(std::move(extra));
  } catch (const UsageError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no usage error";
  return "";
}

TEST(ShardingConfig, DeepSpeedStageAndIgnoredKeys) {
  const Json j = Json::parse(
      R"({"zero_optimization": {"stage": 2, "overlap_comm": true}, "bf16": {"enabled": "auto"},
          "train_micro_batch_size_per_gpu": "auto"})");
  const ShardingChoice c = zero_stage_of_deepspeed(j, "ds.json");
  EXPECT_EQ(c.stage, 2);
  ASSERT_EQ(c.notices.size(), 3u);
  EXPECT_NE(c.notices[0].find("key 'bf16' is ignored"), std::string::npos) << c.notices[0];
  EXPECT_NE(c.notices[1].find("key 'train_micro_batch_size_per_gpu'"), std::string::npos);
  EXPECT_NE(c.notices[2].find("key 'zero_optimization.overlap_comm' is ignored"),
            std::string::npos);
  // No zero_optimization: DeepSpeed's stage 0.
  EXPECT_EQ(zero_stage_of_deepspeed(Json::object(), "ds.json").stage, 0);
  for (const char* bad :
       {R"({"zero_optimization": {"stage": 4}})", R"({"zero_optimization": {"stage": -1}})",
        R"({"zero_optimization": {"stage": "2"}})", R"({"zero_optimization": 2})", "[1]"}) {
    try {
      zero_stage_of_deepspeed(Json::parse(bad), "ds.json");
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("ds.json"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("hint"), std::string::npos) << e.what();
    }
  }
}

TEST(ShardingConfig, FsdpWords) {
  EXPECT_EQ(zero_stage_of_fsdp("full_shard auto_wrap").stage, 3);
  EXPECT_EQ(zero_stage_of_fsdp("shard_grad_op").stage, 2);
  EXPECT_EQ(zero_stage_of_fsdp("no_shard").stage, 0);
  EXPECT_EQ(zero_stage_of_fsdp("auto_wrap").stage, 3);  // accelerate's default: FULL_SHARD
  EXPECT_FALSE(zero_stage_of_fsdp("").stage);
  const ShardingChoice off = zero_stage_of_fsdp("shard_grad_op offload");
  EXPECT_EQ(off.stage, 2);
  ASSERT_EQ(off.notices.size(), 1u);
  EXPECT_THROW(zero_stage_of_fsdp("full_shard shard_grad_op"), Error);
  EXPECT_THROW(zero_stage_of_fsdp("hybrid_shard"), Error);
  EXPECT_THROW(zero_stage_of_fsdp("fully_shard"), Error);
}

TEST(ShardingConfig, FsdpConfigRefinesTheStage) {
  const Json fsdp2 = Json::parse(
      R"({"fsdp_version": 2, "fsdp_reshard_after_forward": false, "min_num_params": 0})");
  const ShardingChoice c = zero_stage_of_fsdp_config(fsdp2, "fsdp.json", 3);
  EXPECT_EQ(c.stage, 2);
  ASSERT_EQ(c.notices.size(), 2u);
  EXPECT_NE(c.notices[0].find("key 'fsdp_version' is ignored"), std::string::npos);
  EXPECT_NE(c.notices[1].find("key 'min_num_params' is ignored"), std::string::npos);
  EXPECT_EQ(
      zero_stage_of_fsdp_config(Json::parse(R"({"sharding_strategy": "SHARD_GRAD_OP"})"), "f", 3)
          .stage,
      2);
  EXPECT_EQ(zero_stage_of_fsdp_config(Json::parse(R"({"sharding_strategy": 3})"), "f", 3).stage, 0);
  EXPECT_THROW(zero_stage_of_fsdp_config(Json::parse(R"({"sharding_strategy": "X"})"), "f", 3),
               Error);
  EXPECT_THROW(zero_stage_of_fsdp_config(Json::parse(R"({"reshard_after_forward": 1})"), "f", 3),
               Error);
  // Without --fsdp: ignored, as transformers does, with one notice.
  const ShardingChoice alone = zero_stage_of_fsdp_config(fsdp2, "fsdp.json", std::nullopt);
  EXPECT_FALSE(alone.stage);
  EXPECT_EQ(alone.notices.size(), 1u);
}

TEST(ShardingConfig, AccelerateNames) {
  EXPECT_EQ(zero_stage_of_accelerate_config("multi_gpu").stage, 0);
  EXPECT_EQ(zero_stage_of_accelerate_config("zero1").stage, 1);
  EXPECT_EQ(zero_stage_of_accelerate_config("zero2").stage, 2);
  EXPECT_EQ(zero_stage_of_accelerate_config("zero3").stage, 3);
  EXPECT_EQ(zero_stage_of_accelerate_config("fsdp2").stage, 3);
  EXPECT_THROW(zero_stage_of_accelerate_config("zero4"), Error);
}

TEST(ShardingArgs, FlagsResolveIntoZeroStage) {
  EXPECT_EQ(parse({"--zero_stage", "2"}).zero_stage, 2);
  EXPECT_EQ(parse({"--accelerate_config", "zero2"}).zero_stage, 2);
  EXPECT_EQ(parse({"--fsdp", "shard_grad_op"}).zero_stage, 2);
  const std::string ds =
      write_file("ds.json", R"({"zero_optimization": {"stage": 1, "reduce_bucket_size": "auto"}})");
  const TrainingArgs a = parse({"--deepspeed", ds});
  EXPECT_EQ(a.zero_stage, 1);
  ASSERT_EQ(a.notices.size(), 1u);
  EXPECT_NE(a.notices[0].find(ds + ": key 'zero_optimization.reduce_bucket_size' is ignored"),
            std::string::npos)
      << a.notices[0];
  EXPECT_EQ(parse({"--deepspeed", R"({"zero_optimization":{"stage":2}})"}).zero_stage, 2);
  const std::string fc = write_file("fsdp.json", R"({"reshard_after_forward": false})");
  EXPECT_EQ(parse({"--fsdp", "full_shard", "--fsdp_config", fc}).zero_stage, 2);
  // Agreeing spellings are fine; disagreeing ones name both.
  EXPECT_EQ(parse({"--zero_stage", "2", "--accelerate_config", "zero2"}).zero_stage, 2);
  const std::string both = usage_error({"--zero_stage", "1", "--fsdp", "shard_grad_op"});
  EXPECT_NE(both.find("--zero_stage 1 means ZeRO stage 1, --fsdp \"shard_grad_op\" stage 2"),
            std::string::npos)
      << both;
}

TEST(ShardingArgs, BadInputIsAUsageErrorNamingThePlace) {
  const std::string broken = write_file("broken.json",
                                        "{\n  \"zero_optimization\": {\n    "
                                        "\"stage\": 2,\n  }\n}\n");
  const std::string e1 = usage_error({"--deepspeed", broken});
  EXPECT_NE(e1.find(broken), std::string::npos) << e1;
  EXPECT_NE(e1.find("line 4, column 3"), std::string::npos) << e1;
  const std::string five = write_file("five.json", R"({"zero_optimization": {"stage": 5}})");
  const std::string e2 = usage_error({"--deepspeed", five});
  EXPECT_NE(e2.find(five), std::string::npos) << e2;
  EXPECT_NE(e2.find("zero_optimization.stage"), std::string::npos) << e2;
  EXPECT_NE(e2.find("must be 0, 1, 2 or 3, got 5"), std::string::npos) << e2;
  const std::string e3 = usage_error({"--zero_stage", "4"});
  EXPECT_NE(e3.find("--zero_stage 4: ZeRO stages are 0, 1, 2 and 3"), std::string::npos) << e3;
  const std::string e4 = usage_error({"--deepspeed", "/nonexistent/ds.json"});
  EXPECT_NE(e4.find("/nonexistent/ds.json"), std::string::npos) << e4;
  // ZeRO-3 on one process, named with the flag that asked for it; with two it is fine.
  const std::string e5 = usage_error({"--fsdp", "full_shard auto_wrap"});
  EXPECT_NE(e5.find("--fsdp \"full_shard auto_wrap\" asks for ZeRO-3"), std::string::npos) << e5;
  EXPECT_NE(e5.find("with 1 process(es)"), std::string::npos) << e5;
  const std::string e6 =
      usage_error({"--zero_stage", "3", "--nproc_per_node", "2", "--tp_size", "2"});
  EXPECT_NE(e6.find("at --tp_size 2, so one data-parallel rank"), std::string::npos) << e6;
  EXPECT_EQ(parse({"--zero_stage", "3", "--nproc_per_node", "2"}).zero_stage, 3);
  EXPECT_EQ(parse({"--accelerate_config", "fsdp2", "--nproc_per_node", "2"}).zero_stage, 3);
}

}  // namespace
}  // namespace sft
