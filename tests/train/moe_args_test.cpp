// The mixture-of-experts flags (train/moe_args.h) as `trl sft` takes them: the load-balancing
// loss's coefficient from --router_aux_loss_coef, else --model_init_kwargs, else the config;
// TRL's refusal on a model without experts; expert parallelism's flags (--ep_size and
// transformers' distributed_config) and its refusals, at parse time and once config.json is read.
#include "train/moe_args.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "io/options.h"
#include "train/args.h"

namespace sft {
namespace {

TrainingArgs parse(std::vector<std::string> extra) {
  std::vector<std::string> tokens = {"--model_name_or_path", "m", "--dataset_name", "d",
                                     "--output_dir",         "o"};
  tokens.insert(tokens.end(), extra.begin(), extra.end());
  return parse_training_args(tokens);
}

ModelConfig moe_config() {
  return parse_model_config(Json{{"model_type", "mixtral"}, {"router_aux_loss_coef", 0.02}}, "c");
}

TEST(MoeArgs, CoefficientFromTheFlagTheInitKwargsOrTheConfig) {
  const ModelConfig moe = moe_config();
  EXPECT_DOUBLE_EQ(router_aux_loss_coef(parse({}), moe), 0.02);
  EXPECT_DOUBLE_EQ(router_aux_loss_coef(parse({"--router_aux_loss_coef", "0.3"}), moe), 0.3);
  const std::string kwargs = R"({"router_aux_loss_coef": 0.2, "output_router_logits": true})";
  const TrainingArgs k = parse({"--model_init_kwargs", kwargs});
  EXPECT_TRUE(k.notices.empty()) << k.notices[0];
  EXPECT_DOUBLE_EQ(router_aux_loss_coef(k, moe), 0.2);
  // SFTConfig's flag wins over the config from_pretrained was given.
  EXPECT_DOUBLE_EQ(router_aux_loss_coef(
                       parse({"--model_init_kwargs", kwargs, "--router_aux_loss_coef", "0"}), moe),
                   0.0);
  EXPECT_EQ(parse({"--model_init_kwargs", R"({"output_router_logits": false})"}).notices.size(),
            1u);
  EXPECT_THROW(parse({"--model_init_kwargs", R"({"router_aux_loss_coef": "big"})"}), UsageError);
}

TEST(MoeArgs, ModelWithoutExpertsRefusesANonZeroCoefficient) {
  const ModelConfig dense = parse_model_config(Json{{"model_type", "llama"}}, "c");
  EXPECT_DOUBLE_EQ(router_aux_loss_coef(parse({}), dense), 0.0);
  EXPECT_DOUBLE_EQ(router_aux_loss_coef(parse({"--router_aux_loss_coef", "0"}), dense), 0.0);
  // from_pretrained's kwarg only sets an attribute there: no loss, no error (as TRL).
  EXPECT_DOUBLE_EQ(router_aux_loss_coef(
                       parse({"--model_init_kwargs", R"({"router_aux_loss_coef": 0.1})"}), dense),
                   0.0);
  try {
    router_aux_loss_coef(parse({"--router_aux_loss_coef", "0.01"}), dense);
    ADD_FAILURE() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--router_aux_loss_coef 0.01: the model (model_type "
                                         "llama) is not a mixture of experts"),
              std::string::npos)
        << e.what();
  }
}

// The usage error's text, or "" when there is none.
template <typename F>
std::string usage_error_of(F&& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(MoeArgs, ExpertParallelSizeFromTheFlagOrDistributedConfig) {
  EXPECT_EQ(parse({"--ep_size", "1"}).ep_size, 1);
  // --nproc_per_node gives the world size at parse time (as mpirun's environment does).
  EXPECT_EQ(parse({"--nproc_per_node", "4", "--ep_size", "2"}).ep_size, 2);
  EXPECT_EQ(parse({"--nproc_per_node", "4", "--model_init_kwargs",
                   R"({"distributed_config": {"ep_size": 4}})"})
                .ep_size,
            4);
  EXPECT_NE(usage_error_of([] {
              parse({"--nproc_per_node", "4", "--ep_size", "2", "--model_init_kwargs",
                     R"({"distributed_config": {"ep_size": 4}})"});
            }).find("--ep_size 2 and --model_init_kwargs distributed_config ep_size 4 disagree"),
            std::string::npos);
  // Its other keys are sft's own flags: a notice each.
  const TrainingArgs other =
      parse({"--model_init_kwargs", R"({"distributed_config": {"tp_size": 2}})"});
  EXPECT_EQ(other.ep_size, 1);
  bool noticed = false;
  for (const std::string& n : other.notices)
    noticed |= n.find("distributed_config key 'tp_size' has no effect") != std::string::npos;
  EXPECT_TRUE(noticed);
  EXPECT_NE(usage_error_of([] {
              parse({"--model_init_kwargs",
                     R"({"distributed_config": {"enable_expert_parallel": true}})"});
            }).find("enable_expert_parallel without an ep_size"),
            std::string::npos);
}

TEST(MoeArgs, ExpertParallelismRefusesWhatItDoesNotComposeWith) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--ep_size", "2"},
       "--ep_size 2: the world size 1 (mpirun -np or --nproc_per_node) does not divide by it"},
      {{"--ep_size", "0"}, "--ep_size must be at least 1"},
      {{"--nproc_per_node", "4", "--ep_size", "2", "--zero_stage", "2"},
       "--ep_size 2 with --zero_stage 2 (or a --fsdp / --deepspeed / --accelerate_config "
       "sharding): expert parallelism does not compose with it yet"},
      {{"--nproc_per_node", "4", "--ep_size", "4", "--tp_size", "2"},
       "--ep_size 4: the world size 4 (mpirun -np or --nproc_per_node) over --tp_size 2 (2 "
       "data-parallel ranks) does not divide by it (hint: run a multiple of 8 processes)"},
      {{"--nproc_per_node", "2", "--ep_size", "2", "--use_peft", "true"},
       "--ep_size 2 with --use_peft: expert parallelism does not compose with it yet"},
  };
  for (const auto& c : cases)
    EXPECT_NE(usage_error_of([&] { parse(c.first); }).find(c.second), std::string::npos)
        << "wanted " << c.second;
}

// Expert parallelism splits each tensor-parallel rank's data-parallel group.
TEST(MoeArgs, ExpertParallelismComposesWithTensorParallelism) {
  EXPECT_EQ(usage_error_of([&] {
              parse({"--nproc_per_node", "4", "--ep_size", "2", "--tp_size", "2"});
            }),
            "");
  EXPECT_EQ(usage_error_of([&] {
              parse({"--nproc_per_node", "8", "--ep_size", "4", "--tp_size", "2"});
            }),
            "");
}

TEST(MoeArgs, ExpertParallelismNeedsExpertsThatDivide) {
  const TrainingArgs a = parse({"--nproc_per_node", "3", "--ep_size", "3", "--use_cpu", "true"});
  ModelConfig moe = moe_config();
  moe.num_experts = 4;
  EXPECT_NE(usage_error_of([&] { check_expert_parallel(a, moe, "m/config.json"); })
                .find("--ep_size 3: the 4 experts of m/config.json (num_experts / "
                      "num_local_experts) do not divide by it"),
            std::string::npos);
  moe.num_experts = 6;
  EXPECT_EQ(usage_error_of([&] { check_expert_parallel(a, moe, "m/config.json"); }), "");
  const ModelConfig dense = parse_model_config(Json{{"model_type", "llama"}}, "c");
  EXPECT_NE(usage_error_of([&] {
              check_expert_parallel(a, dense, "m/config.json");
            }).find("is not a mixture of experts, so there are no experts to split"),
            std::string::npos);
}

}  // namespace
}  // namespace sft
