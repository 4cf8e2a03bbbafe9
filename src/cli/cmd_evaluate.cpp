// `sft evaluate --model DIR --dataset FILE`: held-out exact match of greedy answers.
//
// The model and --tokenizer are folders or Hub ids, the dataset a file, or a folder / glob /
// Hub dataset id whose --split (default test) is read, all from the HF cache as `sft train`
// resolves them (io/hf_hub.h, data/sources.h).
//
// Every row must be a conversation whose last message is the assistant's reference answer
// (`messages`), or a conversational prompt/completion pair whose completion is one assistant
// message. The messages before the answer are rendered with the model's chat template and
// add_generation_prompt=True and tokenized without special tokens (as apply_chat_template);
// the model then generates greedily until an eos id of generation_config.json (else
// config.json) or --max_new_tokens. The decoded answer (special tokens skipped) matches when it
// equals the reference after stripping surrounding whitespace on both, as Python's str.strip().
//
// Prints the first --show_failures mismatches and `exact_match: 0.973 (973/1000)`; exits 0, or
// fails when the score is below --min_exact_match (the quickstart's acceptance check).
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "cli/command_line.h"
#include "cli/command_registry.h"
#include "cli/generation_setup.h"
#include "core/error.h"
#include "data/format.h"
#include "data/row_errors.h"
#include "data/sources.h"
#include "io/hf_hub.h"
#include "io/options.h"
#include "model/generate.h"
#include "model/model_dir.h"
#include "model/transformer.h"
#include "text/tokenizer.h"
#include "train/adapter_io.h"

namespace sft::cli {

namespace {

constexpr const char* kUsage =
    "usage: sft evaluate --model PATH --dataset DATA [--split NAME] [--tokenizer PATH]\n"
    "                    [--max_new_tokens N] [--limit N] [--show_failures N]\n"
    "                    [--min_exact_match X] [--use_cpu]\n\n"
    "Greedy answers to held-out conversations, compared with the reference answers.\n";

// One held-out question: the messages to continue and the reference answer.
struct Item {
  jinja::OrderedJson prompt;
  jinja::OrderedJson tools;
  jinja::OrderedJson kwargs = jinja::OrderedJson::object();
  std::string reference;
  FileLocation where;
};

// Python's str.strip() without arguments, for the ASCII whitespace an answer can carry.
std::string strip(const std::string& s) {
  constexpr const char* kSpace = " \t\n\r\f\v";
  const size_t begin = s.find_first_not_of(kSpace);
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(kSpace) - begin + 1);
}

// The reference is the last message: an assistant turn with string content.
std::string reference_answer(const std::vector<data::Message>& messages,
                             const FileLocation& where) {
  const char* hint =
      "each row must end with the assistant's reference answer, e.g. {\"messages\": "
      "[{\"role\": \"user\", \"content\": \"Q\"}, {\"role\": \"assistant\", \"content\": \"A\"}]}";
  if (messages.empty() || messages.back().role != "assistant")
    fail_in_file("evaluate", where, "the last message is not an assistant turn", hint);
  if (!messages.back().content.is_string())
    fail_in_file("evaluate", where, "the reference answer is not a string", hint);
  return messages.back().content.get<std::string>();
}

Item to_item(data::Example&& example, const FileLocation& where) {
  Item item;
  item.where = where;
  std::vector<data::Message> prompt;
  data::RowJson tools, kwargs;
  if (auto* c = std::get_if<data::Conversation>(&example)) {
    item.reference = reference_answer(c->messages, where);
    prompt.assign(c->messages.begin(), c->messages.end() - 1);
    tools = c->tools;
    kwargs = c->chat_template_kwargs;
  } else if (auto* pc = std::get_if<data::PromptCompletion>(&example); pc && pc->conversational) {
    if (pc->completion_messages.size() != 1)
      fail_in_file("evaluate", where, "the completion is not one assistant message",
                   "evaluate compares a single answer per row");
    item.reference = reference_answer(pc->completion_messages, where);
    prompt = pc->prompt_messages;
    tools = pc->tools;
    kwargs = pc->chat_template_kwargs;
  } else {
    fail_in_file("evaluate", where, "the row is not conversational",
                 "evaluate needs `messages` or conversational `prompt` + `completion` rows");
  }
  // Rows keep the file's key order (data::RowJson), which the template must see as is.
  item.prompt = data::message_list_to_json(prompt);
  if (!tools.is_null()) item.tools = std::move(tools);
  if (kwargs.is_object()) item.kwargs = std::move(kwargs);
  return item;
}

struct EvaluateFlags {
  std::string model, dataset, tokenizer, dataset_config, split = "test";
  int64_t max_new_tokens = 32, limit = 0, show_failures = 5;
  std::optional<double> min_exact_match;
  bool use_cpu = false;
};

OptionSet evaluate_options(EvaluateFlags& f) {
  OptionSet options("evaluate");
  const std::string input = "input", generation = "generation", output = "output";
  options.add_string("model", &f.model, input,
                     "model folder, or Hub id (ORG/NAME) in the HF cache; a PEFT adapter folder "
                     "too");
  options.add_string("dataset", &f.dataset, input,
                     ".jsonl / .json / .parquet, folder, glob or Hub id: `messages` ending with "
                     "the answer, or conversational `prompt` + `completion`");
  options.add_string("dataset_config", &f.dataset_config, input,
                     "the dataset's config (subset), if it has several");
  options.add_string("split", &f.split, input, "split of a folder / Hub dataset");
  options.add_string("tokenizer", &f.tokenizer, input,
                     "tokenizer folder or Hub id with the chat template (empty: the model's)");
  options.add_int("limit", &f.limit, input, "only the first N rows (0: all)");
  options.add_int("max_new_tokens", &f.max_new_tokens, generation, "longest answer generated");
  options.add_bool("use_cpu", &f.use_cpu, generation,
                   "run on the CPU even where a CUDA build sees a GPU (as sft train's --use_cpu)");
  options.add_int("show_failures", &f.show_failures, output, "print the first N mismatches");
  options.add_optional_float("min_exact_match", &f.min_exact_match, output,
                             "fail (exit 1) when the exact match is below X, in [0, 1]");
  return options;
}

void check_flags(const EvaluateFlags& f) {
  for (const auto* n : {&f.max_new_tokens, &f.limit, &f.show_failures})
    if (*n < 0) fail_usage("cli", "sft evaluate: counts must be non-negative (see --help)");
  if (f.min_exact_match && (*f.min_exact_match < 0 || *f.min_exact_match > 1))
    fail_usage("cli", "--min_exact_match expects a number in [0, 1]");
}

}  // namespace

int run_evaluate(const Args& args) {
  EvaluateFlags flags;
  OptionSet flag_options = evaluate_options(flags);
  if (!parse_command_line("evaluate", kUsage, flag_options, args)) return 0;
  check_flags(flags);
  const std::string& model_path = flags.model;
  const std::string& dataset = flags.dataset;
  std::string tokenizer_path = flags.tokenizer;
  const int64_t max_new_tokens = flags.max_new_tokens, limit = flags.limit,
                show_failures = flags.show_failures;
  const std::optional<double> min_exact_match = flags.min_exact_match;
  if (model_path.empty() || dataset.empty()) return usage_error(kUsage);
  // A PEFT adapter folder works too: its base model with the adapter applied.
  const ModelSource source = resolve_model_source(model_path);
  const std::string model_dir = source.model_dir;
  tokenizer_path = tokenizer_path.empty() ? source.tokenizer_dir
                                          : resolve_hub_folder(tokenizer_path, HubRepoType::kModel);
  // A file is read whole (a lone file has no splits); anything else is a dataset's split.
  const std::vector<std::string> files =
      std::filesystem::is_regular_file(dataset)
          ? std::vector<std::string>{dataset}
          : data::resolve_split_files({dataset, flags.dataset_config}, flags.split);

  std::vector<Item> items;
  data::RowErrors errors(/*skip_invalid_rows=*/false);
  data::read_examples(files, data::FormatOptions{}, errors,
                      [&](data::Example&& example, const data::RowRef& where) {
                        if (limit > 0 && static_cast<int64_t>(items.size()) >= limit) return;
                        items.push_back(to_item(std::move(example), where.location()));
                      });
  if (items.empty())
    fail_in_file("evaluate", {dataset, ""}, "no rows to evaluate", "the file is empty");

  const text::Tokenizer tokenizer = text::Tokenizer::from_file(tokenizer_path);
  const chat::ChatTemplate chat_template = chat::ChatTemplate::from_tokenizer(tokenizer_path);
  model::Transformer m = load_model_source(source);
  place_model(m, flags.use_cpu);
  model::GenerateOptions options = generation_defaults(model_dir, m.config());
  options.sampling = {};  // greedy, whatever generation_config.json says
  options.max_new_tokens = max_new_tokens;

  int64_t correct = 0, shown = 0;
  for (const Item& item : items) {
    chat::ChatInputs inputs;
    inputs.messages = item.prompt;
    inputs.tools = item.tools;
    inputs.kwargs = item.kwargs;
    inputs.add_generation_prompt = true;
    const std::vector<int64_t> prompt = chat_prompt_ids(tokenizer, chat_template, inputs);
    const std::vector<int64_t> out = model::generate(m, prompt, options);
    const std::vector<int32_t> ids(out.begin(), out.end());
    const std::string answer = strip(tokenizer.decode(ids, /*skip_special_tokens=*/true));
    const std::string want = strip(item.reference);
    if (answer == want) {
      ++correct;
    } else if (shown < show_failures) {
      ++shown;
      const jinja::OrderedJson last =
          item.prompt.empty() ? jinja::OrderedJson() : item.prompt.back();
      const std::string question = last.contains("content") && last["content"].is_string()
                                       ? last["content"].get<std::string>()
                                       : last.dump();
      std::printf("mismatch %s: %s\n  want: %s\n   got: %s\n", item.where.place.c_str(),
                  question.c_str(), want.c_str(), answer.c_str());
    }
  }
  const auto total = static_cast<int64_t>(items.size());
  const double score = static_cast<double>(correct) / static_cast<double>(total);
  std::printf("exact_match: %.3f (%lld/%lld)\n", score, static_cast<long long>(correct),
              static_cast<long long>(total));
  std::fflush(stdout);
  if (min_exact_match && score < *min_exact_match) {
    char message[160];
    std::snprintf(message, sizeof message, "exact match %.3f is below --min_exact_match %g", score,
                  *min_exact_match);
    fail("evaluate", message);
  }
  return 0;
}

SFT_REGISTER_COMMAND("evaluate", "exact match of greedy answers on held-out conversations",
                     run_evaluate);

}  // namespace sft::cli
