// `sft generate --model PATH (--prompt STR | --messages FILE.json | --prompt_ids IDS)`: text
// generation with a KV cache. A prompt is tokenized as transformers' tokenizer(prompt) does
// (with special tokens); messages are rendered with the chat template and
// add_generation_prompt, then tokenized without special tokens, as apply_chat_template does.
// The new tokens are printed as text (special tokens skipped), or as ids with --output_ids.
// Sampling defaults come from the model's generation_config.json (do_sample, temperature,
// top_k, top_p) and are overridden by flags; generation stops at max_new_tokens or on an eos
// id of generation_config.json (else config.json). Flags go through OptionSet (io/options.h):
// `--help` lists them by group, an unknown one names the closest.
#include <cstdio>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "cli/command_line.h"
#include "cli/command_registry.h"
#include "cli/generation_setup.h"
#include "core/error.h"
#include "io/json.h"
#include "io/mapped_file.h"
#include "io/options.h"
#include "model/generate.h"
#include "model/model_dir.h"
#include "model/transformer.h"
#include "text/tokenizer.h"
#include "train/adapter_io.h"

namespace sft::cli {

namespace {

constexpr const char* kUsage =
    "usage: sft generate --model PATH (--prompt STR | --messages FILE.json | --prompt_ids IDS |\n"
    "                    --prompt_ids_file FILE.json) [--tokenizer PATH] [--max_new_tokens N]\n"
    "                    [--do_sample | --greedy] [--temperature T] [--top_k K] [--top_p P]\n"
    "                    [--seed S] [--no_cache] [--output_ids] [--use_cpu]\n\n"
    "A prompt is tokenized with special tokens (as tokenizer(prompt)); messages are rendered\n"
    "with the chat template and the generation prompt (as apply_chat_template). Sampling\n"
    "defaults come from generation_config.json; --temperature, --top_k or --top_p imply\n"
    "--do_sample.\n";

// The flags as given; run_generate turns them into a prompt and GenerateOptions.
struct GenerateFlags {
  std::string model, tokenizer, prompt, messages, prompt_ids, prompt_ids_file;
  int64_t max_new_tokens = model::GenerateOptions{}.max_new_tokens, seed = 0;
  bool do_sample = false, greedy = false, no_cache = false, output_ids = false, use_cpu = false;
  std::optional<double> temperature, top_p;
  std::optional<int64_t> top_k;
};

OptionSet generate_options(GenerateFlags& f) {
  OptionSet o("generate");
  const std::string in = "input", gen = "generation", out = "output";
  o.add_string("model", &f.model, in, "model folder or Hub id");
  o.add_string("tokenizer", &f.tokenizer, in, "tokenizer folder; empty = the model folder");
  o.add_string("prompt", &f.prompt, in, "text, tokenized with special tokens");
  o.add_string("messages", &f.messages, in,
               "FILE.json: a conversation, rendered with the chat template");
  o.add_string("prompt_ids", &f.prompt_ids, in, "comma-separated token ids, e.g. 1,2,3");
  o.add_string("prompt_ids_file", &f.prompt_ids_file, in, "FILE.json: a JSON array of token ids");
  o.add_int("max_new_tokens", &f.max_new_tokens, gen, "most tokens generated");
  o.add_bool("do_sample", &f.do_sample, gen, "sample; unset = as generation_config.json says");
  o.add_bool("greedy", &f.greedy, gen, "greedy decoding, whatever else is set");
  o.add_optional_float("temperature", &f.temperature, gen, "sampling temperature (0: greedy)");
  o.add_optional_int("top_k", &f.top_k, gen, "sample among the K likeliest tokens");
  o.add_optional_float("top_p", &f.top_p, gen, "sample within probability mass P");
  o.add_int("seed", &f.seed, gen, "sampling seed");
  o.add_bool("no_cache", &f.no_cache, gen,
             "recompute the whole sequence each step (slow; for checks)");
  o.add_bool("output_ids", &f.output_ids, out, "print the new ids as a JSON array, not text");
  o.add_bool("use_cpu", &f.use_cpu, gen,
             "run on the CPU even where a CUDA build sees a GPU (as sft train's --use_cpu)");
  return o;
}

std::vector<int64_t> parse_ids(const std::string& text) {
  std::vector<int64_t> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      out.push_back(std::stoll(item, &used));
      if (item.find_first_not_of(" \t", used) != std::string::npos) throw std::invalid_argument("");
    } catch (const std::exception&) {
      fail_usage("cli",
                 "--prompt_ids: '" + item + "' is not a token id (hint: --prompt_ids 1,2,3)");
    }
  }
  return out;
}

std::vector<int64_t> read_ids_file(const std::string& path) {
  const Json j = read_json_file(path, "generate");
  if (!j.is_array())
    fail_in_file("generate", {path, ""}, "expected a JSON array of token ids", "e.g. [1, 2, 3]");
  std::vector<int64_t> out;
  for (const Json& v : j) {
    if (!v.is_number_integer())
      fail_in_file("generate", {path, ""}, "expected integers", "e.g. [1, 2, 3]");
    out.push_back(v.get<int64_t>());
  }
  return out;
}

// The conversation in FILE.json rendered with the generation prompt, as prompt ids.
std::vector<int64_t> messages_prompt(const std::string& path, const text::Tokenizer& tokenizer,
                                     const std::string& tokenizer_path) {
  jinja::OrderedJson messages = chat::parse_ordered_json(read_text_file(path, "generate"), path);
  if (messages.is_object() && messages.contains("messages")) messages = messages["messages"];
  if (!messages.is_array()) {
    fail_in_file("generate", {path, ""}, "expected a list of messages",
                 "e.g. [{\"role\": \"user\", \"content\": \"Hi\"}], or {\"messages\": [...]}");
  }
  chat::ChatInputs inputs;
  inputs.messages = std::move(messages);
  inputs.add_generation_prompt = true;
  return chat_prompt_ids(tokenizer, chat::ChatTemplate::from_tokenizer(tokenizer_path), inputs);
}

}  // namespace

int run_generate(const Args& args) {
  GenerateFlags f;
  OptionSet options = generate_options(f);
  if (!parse_command_line("generate", kUsage, options, args)) return 0;
  const int prompt_sources =
      !f.prompt.empty() + !f.messages.empty() + !f.prompt_ids.empty() + !f.prompt_ids_file.empty();
  if (f.model.empty() || prompt_sources != 1) return usage_error(kUsage);
  std::vector<int64_t> prompt;
  if (!f.prompt_ids.empty()) prompt = parse_ids(f.prompt_ids);
  if (!f.prompt_ids_file.empty()) prompt = read_ids_file(f.prompt_ids_file);

  // A PEFT adapter folder works too: its base model with the adapter applied.
  const ModelSource source = resolve_model_source(f.model);
  const std::string model_dir = source.model_dir;
  const std::string tokenizer_path = f.tokenizer.empty() ? source.tokenizer_dir : f.tokenizer;
  // The tokenizer is needed for text in or out; ids in and ids out work without one.
  std::optional<text::Tokenizer> tokenizer;
  if (!f.prompt.empty() || !f.messages.empty() || !f.output_ids) {
    tokenizer = text::Tokenizer::from_file(tokenizer_path);
  }
  if (!f.prompt.empty()) {
    const std::vector<int32_t> encoded = tokenizer->encode(f.prompt, /*add_special_tokens=*/true);
    prompt.assign(encoded.begin(), encoded.end());
  }
  if (!f.messages.empty()) prompt = messages_prompt(f.messages, *tokenizer, tokenizer_path);
  if (prompt.empty()) fail("generate", "the prompt is empty after tokenization");

  model::Transformer m = load_model_source(source);
  place_model(m, f.use_cpu);
  // generation_config.json: sampling defaults and eos ids, as transformers' generate uses them.
  const model::GenerateOptions defaults = generation_defaults(model_dir, m.config());
  model::GenerateOptions o;
  o.max_new_tokens = f.max_new_tokens;
  o.seed = static_cast<uint64_t>(f.seed);
  o.use_cache = !f.no_cache;
  o.eos_token_ids = defaults.eos_token_ids;
  o.sampling = defaults.sampling;
  if (f.temperature) o.sampling.temperature = *f.temperature;
  if (f.top_k) o.sampling.top_k = *f.top_k;
  if (f.top_p) o.sampling.top_p = *f.top_p;
  if (f.do_sample || f.temperature || f.top_k || f.top_p) o.sampling.do_sample = true;
  if (f.greedy || (f.temperature && *f.temperature == 0)) o.sampling.do_sample = false;

  const std::vector<int64_t> out = model::generate(m, prompt, o);
  if (f.output_ids) {
    Json ids = Json::array();
    for (int64_t id : out) ids.push_back(id);
    std::printf("%s\n", ids.dump().c_str());
    return 0;
  }
  const std::vector<int32_t> ids(out.begin(), out.end());
  std::printf("%s\n", tokenizer->decode(ids, /*skip_special_tokens=*/true).c_str());
  return 0;
}

SFT_REGISTER_COMMAND("generate", "generate tokens from a model (KV cache; greedy or sampled)",
                     run_generate);

}  // namespace sft::cli
