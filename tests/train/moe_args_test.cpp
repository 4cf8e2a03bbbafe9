// The mixture-of-experts flags (train/moe_args.h) as `trl sft` takes them: the load-balancing
// loss's coefficient from --router_aux_loss_coef, else --model_init_kwargs, else the config;
// TRL's refusal on a model without experts; expert parallelism refused at parse time.
#include "train/moe_args.h"

#include <gtest/gtest.h>

#include <string>
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

TEST(MoeArgs, ExpertParallelismIsRefused) {
  EXPECT_EQ(parse({"--ep_size", "1"}).ep_size, 1);
  for (const std::vector<std::string>& given :
       {std::vector<std::string>{"--ep_size", "2"},
        std::vector<std::string>{"--model_init_kwargs",
                                 R"({"distributed_config": {"ep_size": 4}})"},
        std::vector<std::string>{"--model_init_kwargs",
                                 R"({"distributed_config": {"enable_expert_parallel": true}})"}}) {
    try {
      parse(given);
      ADD_FAILURE() << "no error for " << given[1];
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("expert parallelism is not built"), std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace sft
