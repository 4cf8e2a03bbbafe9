// `sft generate --model PATH (--prompt STR | --messages FILE.json | --prompt_ids IDS)`: text
// generation with a KV cache. A prompt is tokenized as transformers' tokenizer(prompt) does
// (with special tokens); messages are rendered with the chat template and
// add_generation_prompt, then tokenized without special tokens, as apply_chat_template does.
// The new tokens are printed as text (special tokens skipped), or as ids with --output_ids.
// Sampling defaults come from the model's generation_config.json (do_sample, temperature,
// top_k, top_p) and are overridden by flags; generation stops at max_new_tokens or on an eos
// id of generation_config.json (else config.json).
#include <cstdio>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "cli/command_registry.h"
#include "cli/generation_setup.h"
#include "core/error.h"
#include "io/json.h"
#include "io/mapped_file.h"
#include "model/generate.h"
#include "model/model_dir.h"
#include "model/transformer.h"
#include "text/tokenizer.h"

namespace sft::cli {

namespace {

constexpr const char* kUsage =
    "usage: sft generate --model PATH (--prompt STR | --messages FILE.json | --prompt_ids IDS |\n"
    "                    --prompt_ids_file FILE.json) [--tokenizer PATH] [--max_new_tokens N]\n"
    "                    [--do_sample | --greedy] [--temperature T] [--top_k K] [--top_p P]\n"
    "                    [--seed S] [--no_cache] [--output_ids]\n\n"
    "  --prompt STR            text, tokenized with special tokens (as tokenizer(prompt))\n"
    "  --messages FILE.json    a conversation, rendered with the chat template and the\n"
    "                          generation prompt (as apply_chat_template)\n"
    "  --tokenizer PATH        tokenizer folder (default: the model folder)\n"
    "  --prompt_ids IDS        comma-separated token ids, e.g. 1,2,3\n"
    "  --prompt_ids_file FILE  a JSON array of token ids\n"
    "  --max_new_tokens N      default 256\n"
    "  --do_sample / --greedy  sampling defaults come from generation_config.json;\n"
    "                          --temperature, --top_k or --top_p imply --do_sample\n"
    "  --seed S                sampling seed (default 0)\n"
    "  --no_cache              recompute the whole sequence each step (slow; for checks)\n"
    "  --output_ids            print the generated ids as a JSON array instead of text\n";

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
      fail("cli", "--prompt_ids: '" + item + "' is not a token id (hint: --prompt_ids 1,2,3)");
    }
  }
  return out;
}

double number(const std::string& flag, const std::string& v) {
  try {
    size_t used = 0;
    const double d = std::stod(v, &used);
    if (used == v.size()) return d;
  } catch (const std::exception&) {
  }
  fail("cli", flag + " expects a number, got '" + v + "'");
}

}  // namespace

int run_generate(const Args& args) {
  std::string model_path, tokenizer_path, prompt_text, messages_path;
  bool output_ids = false;
  std::vector<int64_t> prompt;
  model::GenerateOptions o;
  bool sample_flag = false, greedy_flag = false;
  std::optional<double> temperature, top_p;
  std::optional<int64_t> top_k;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) fail("cli", "sft generate: " + a + " needs a value");
      return args[++i];
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--model") {
      model_path = value();
    } else if (a == "--prompt_ids") {
      prompt = parse_ids(value());
    } else if (a == "--prompt_ids_file") {
      const std::string f = value();
      const Json j = read_json_file(f, "generate");
      if (!j.is_array())
        fail_in_file("generate", {f, ""}, "expected a JSON array of token ids", "e.g. [1, 2, 3]");
      for (const Json& v : j) {
        if (!v.is_number_integer())
          fail_in_file("generate", {f, ""}, "expected integers", "e.g. [1, 2, 3]");
        prompt.push_back(v.get<int64_t>());
      }
    } else if (a == "--prompt") {
      prompt_text = value();
    } else if (a == "--messages") {
      messages_path = value();
    } else if (a == "--tokenizer") {
      tokenizer_path = value();
    } else if (a == "--max_new_tokens") {
      o.max_new_tokens = static_cast<int64_t>(number(a, value()));
    } else if (a == "--temperature") {
      temperature = number(a, value());
    } else if (a == "--top_p") {
      top_p = number(a, value());
    } else if (a == "--top_k") {
      top_k = static_cast<int64_t>(number(a, value()));
    } else if (a == "--seed") {
      o.seed = static_cast<uint64_t>(number(a, value()));
    } else if (a == "--do_sample") {
      sample_flag = true;
    } else if (a == "--greedy") {
      greedy_flag = true;
    } else if (a == "--no_cache") {
      o.use_cache = false;
    } else if (a == "--output_ids") {
      output_ids = true;
    } else {
      fail("cli", "sft generate: unknown argument '" + a + "' (see --help)");
    }
  }
  const int prompt_sources = !prompt.empty() + !prompt_text.empty() + !messages_path.empty();
  if (model_path.empty() || prompt_sources != 1) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string model_dir = open_model_dir(model_path).path;
  if (tokenizer_path.empty()) tokenizer_path = model_dir;
  // The tokenizer is needed for text in or out; ids in and ids out work without one.
  std::optional<text::Tokenizer> tokenizer;
  if (!prompt_text.empty() || !messages_path.empty() || !output_ids) {
    tokenizer = text::Tokenizer::from_file(tokenizer_path);
  }
  std::vector<int32_t> encoded;
  if (!prompt_text.empty()) encoded = tokenizer->encode(prompt_text, /*add_special_tokens=*/true);
  if (!messages_path.empty()) {
    chat::ChatInputs inputs;
    jinja::OrderedJson messages =
        chat::parse_ordered_json(read_text_file(messages_path, "generate"), messages_path);
    if (messages.is_object() && messages.contains("messages")) messages = messages["messages"];
    if (!messages.is_array()) {
      fail_in_file("generate", {messages_path, ""}, "expected a list of messages",
                   "e.g. [{\"role\": \"user\", \"content\": \"Hi\"}], or {\"messages\": [...]}");
    }
    inputs.messages = std::move(messages);
    inputs.add_generation_prompt = true;
    const std::vector<int64_t> ids =
        chat_prompt_ids(*tokenizer, chat::ChatTemplate::from_tokenizer(tokenizer_path), inputs);
    prompt.insert(prompt.end(), ids.begin(), ids.end());
  }
  prompt.insert(prompt.end(), encoded.begin(), encoded.end());
  if (prompt.empty()) fail("generate", "the prompt is empty after tokenization");

  model::Transformer m = model::Transformer::load(model_path);
  // generation_config.json: sampling defaults and eos ids, as transformers' generate uses them.
  const model::GenerateOptions defaults = generation_defaults(model_dir, m.config());
  o.eos_token_ids = defaults.eos_token_ids;
  o.sampling = defaults.sampling;
  if (temperature) o.sampling.temperature = *temperature;
  if (top_k) o.sampling.top_k = *top_k;
  if (top_p) o.sampling.top_p = *top_p;
  if (sample_flag || temperature || top_k || top_p) o.sampling.do_sample = true;
  if (greedy_flag || (temperature && *temperature == 0)) o.sampling.do_sample = false;

  const std::vector<int64_t> out = model::generate(m, prompt, o);
  if (output_ids) {
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
