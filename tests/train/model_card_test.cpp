// output_dir/README.md against the cards TRL 1.16 writes (tests/fixtures/model_card/, made by
// tools/make_wandb_goldens.py): the same front matter keys and values, the same sections in
// the same order (plus transformers' hyperparameter list), the same Quick start.
#include "train/model_card.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <sstream>

#include "test_paths.h"

namespace sft {

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::string front_matter(const std::string& card) {
  const size_t end = card.find("\n---\n", 4);
  return card.substr(0, end + 5);
}

std::vector<std::string> headings(const std::string& card) {
  std::vector<std::string> h;
  bool code = false;
  for (const std::string& l : lines_of(card)) {
    if (l.rfind("```", 0) == 0) code = !code;
    if (!code && l.rfind("#", 0) == 0) h.push_back(l);
  }
  return h;
}

std::string block(const std::string& card, const std::string& opening) {
  const size_t a = card.find(opening);
  if (a == std::string::npos) return "";
  const size_t end = card.find("\n```", a + opening.size());
  return card.substr(a, end == std::string::npos ? end : end + 4 - a);
}

TrainingArgs hub_args() {
  TrainingArgs a;
  a.model_name_or_path = "Qwen/Qwen3-0.6B";  // not a local path: a Hub id
  a.dataset_name = "trl-lib/Capybara";
  a.output_dir = "Qwen3-0.6B-SFT";
  a.learning_rate = 2e-5;
  a.per_device_train_batch_size = 1;
  a.gradient_accumulation_steps = 16;
  a.num_train_epochs = 1;
  a.bf16 = true;
  a.packing = true;
  return a;
}

}  // namespace

TEST(ModelCard, HubModelMatchesTrlsCard) {
  const std::string trl = read_text(test::source_path("tests/fixtures/model_card/trl_hub.md"));
  const std::string ours =
      render_model_card(model_card_info(hub_args(), 1, std::string("user/Qwen3-0.6B-SFT")));
  std::string expected_front = front_matter(trl);
  const std::string trl_tags = "- generated_from_trainer\n- trl\n- sft\n";
  ASSERT_NE(expected_front.find(trl_tags), std::string::npos);
  expected_front.replace(expected_front.find(trl_tags), trl_tags.size(),
                         "- generated_from_trainer\n- sft\n- sft.cpp\n");
  EXPECT_EQ(front_matter(ours), expected_front);

  std::vector<std::string> expected_headings = headings(trl);
  const auto framework =
      std::find(expected_headings.begin(), expected_headings.end(), "### Framework versions");
  ASSERT_NE(framework, expected_headings.end());
  expected_headings.insert(framework, "### Training hyperparameters");
  EXPECT_EQ(headings(ours), expected_headings);
  EXPECT_EQ(block(ours, "```python"), block(trl, "```python"));
  EXPECT_EQ(block(ours, "```bibtex"), block(trl, "```bibtex"));
  // TRL's first sentence, word for word.
  const std::string first = lines_of(trl.substr(trl.find("This model is")))[0];
  EXPECT_NE(ours.find(first + "\n"), std::string::npos) << first;
  EXPECT_NE(ours.find("- learning_rate: 2e-05\n"), std::string::npos);
  EXPECT_NE(ours.find("- gradient_accumulation_steps: 16\n- total_train_batch_size: 16\n"),
            std::string::npos);
  EXPECT_NE(ours.find("- num_epochs: 1.0\n"), std::string::npos);
  EXPECT_NE(ours.find(std::string("- sft.cpp: ") + SFT_VERSION), std::string::npos);
}

TEST(ModelCard, LocalModelHasNoHubLinks) {
  const std::string trl = read_text(test::source_path("tests/fixtures/model_card/trl_local.md"));
  TrainingArgs a = hub_args();
  a.model_name_or_path = test::source_path("tests/fixtures/trl_parity/model");
  a.dataset_name = test::source_path("tests/fixtures/trl_parity/data.jsonl");
  a.output_dir = "/tmp/runs/tiny-sft/";
  a.max_steps = 4;
  const std::string ours = render_model_card(model_card_info(a, 1));
  // As TRL: no base_model and no datasets in the front matter for local sources.
  std::string expected_front = front_matter(trl);
  expected_front.replace(expected_front.find("- trl\n- sft\n"), 12, "- sft\n- sft.cpp\n");
  EXPECT_EQ(front_matter(ours), expected_front);
  EXPECT_EQ(ours.find("None"), std::string::npos);
  EXPECT_NE(ours.find("fine-tuned version of the local model `model` on the local dataset "
                      "`data.jsonl`."),
            std::string::npos);
  EXPECT_NE(ours.find("model=\"/tmp/runs/tiny-sft/\""), std::string::npos);
  EXPECT_NE(ours.find("- training_steps: 4\n"), std::string::npos);
  auto sections = [](const std::string& card) {  // all but the title
    auto h = headings(card);
    return std::vector<std::string>(h.begin() + 1, h.end());
  };
  EXPECT_EQ(sections(ours), sections(render_model_card(model_card_info(hub_args(), 1))));
}

TEST(ModelCard, YamlQuotesWhatPyYamlQuotes) {
  TrainingArgs a = hub_args();
  a.output_dir = "runs/yes";  // a YAML boolean word: PyYAML quotes it
  EXPECT_NE(render_model_card(model_card_info(a, 1)).find("model_name: 'yes'\n"),
            std::string::npos);
  a.output_dir = "runs/it's: here";
  EXPECT_NE(render_model_card(model_card_info(a, 1)).find("model_name: 'it''s: here'\n"),
            std::string::npos);
}

}  // namespace sft
