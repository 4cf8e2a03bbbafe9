// `sft tokenize --tokenizer PATH [--add_special_tokens] (--input FILE.jsonl | --text STR)`:
// encodes each input line (a JSON string) and prints one JSON array of ids per line;
// with --decode, reads JSON arrays of ids and prints JSON strings. The reference for
// checking our tokenizer against HF `tokenizers` by hand or from scripts.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include "cli/command_line.h"
#include "cli/command_registry.h"
#include "core/error.h"
#include "io/json.h"
#include "io/options.h"
#include "text/tokenizer.h"

namespace sft::cli {

namespace {

constexpr const char* kUsage =
    "usage: sft tokenize --tokenizer PATH [--add_special_tokens] (--input FILE.jsonl | --text "
    "STR)\n"
    "       sft tokenize --tokenizer PATH --decode [--skip_special_tokens] (--input FILE.jsonl | "
    "--text '[ids]')\n\n"
    "PATH is a folder holding tokenizer.json, or the file itself.\n";

struct TokenizeFlags {
  std::string tokenizer, input, text;
  bool add_special_tokens = false, split_special_tokens = false, decode = false,
       skip_special_tokens = false;
};

OptionSet tokenize_options(TokenizeFlags& f) {
  OptionSet o("tokenize");
  const std::string in = "input", enc = "encoding", dec = "decoding";
  o.add_string("tokenizer", &f.tokenizer, in, "folder holding tokenizer.json, or the file");
  o.add_string("input", &f.input, in,
               "FILE.jsonl: one JSON string per line (arrays of ids with --decode); - is stdin");
  o.add_string("text", &f.text, in, "one input given on the command line (raw text, not JSON)");
  o.add_bool("add_special_tokens", &f.add_special_tokens, enc,
             "apply the post-processor (e.g. add <bos>)");
  o.add_bool("split_special_tokens", &f.split_special_tokens, enc,
             "tokenize special tokens' text as ordinary text");
  o.add_bool("decode", &f.decode, dec, "ids -> text");
  o.add_bool("skip_special_tokens", &f.skip_special_tokens, dec,
             "with --decode: drop special tokens");
  return o;
}

std::string ids_json(const std::vector<int32_t>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
  return s + "]";
}

std::vector<int32_t> parse_ids(const std::string& line, const std::string& where) {
  Json j = parse_json_strict(line, "tokenize", where);
  if (!j.is_array()) fail("tokenize", where + ": expected a JSON array of token ids");
  std::vector<int32_t> ids;
  for (const auto& v : j) {
    if (!v.is_number_integer()) fail("tokenize", where + ": ids must be integers");
    ids.push_back(v.get<int32_t>());
  }
  return ids;
}

}  // namespace

int run_tokenize(const Args& args) {
  TokenizeFlags f;
  OptionSet options = tokenize_options(f);
  if (!parse_command_line("tokenize", kUsage, options, args)) return 0;
  const bool have_text = options.was_set("text");
  if (f.tokenizer.empty() || (f.input.empty() == !have_text))
    fail_usage("tokenize",
               std::string("give --tokenizer and exactly one of --input/--text\n") + kUsage);
  text::Tokenizer tok = text::Tokenizer::from_file(f.tokenizer);
  tok.set_split_special_tokens(f.split_special_tokens);

  auto handle = [&](const std::string& line, const std::string& where, bool raw) {
    if (f.decode) {
      std::string out = tok.decode(parse_ids(line, where), f.skip_special_tokens);
      std::cout << Json(out).dump(-1, ' ', false, Json::error_handler_t::replace) << "\n";
    } else {
      std::string s = line;
      if (!raw) {
        Json j = parse_json_strict(line, "tokenize", where);
        if (!j.is_string()) fail("tokenize", where + ": expected a JSON string");
        s = j.get<std::string>();
      }
      std::cout << ids_json(tok.encode(s, f.add_special_tokens)) << "\n";
    }
  };
  if (have_text) {
    handle(f.text, "--text", !f.decode);
    return 0;
  }
  std::ifstream file;
  std::istream* in = &std::cin;
  if (f.input != "-") {
    file.open(f.input);
    if (!file) fail("tokenize", "cannot open '" + f.input + "': " + errno_text(errno));
    in = &file;
  }
  std::string line;
  for (size_t n = 1; std::getline(*in, line); ++n) {
    if (line.empty()) continue;
    handle(line, f.input + ": line " + std::to_string(n), false);
  }
  return 0;
}

SFT_REGISTER_COMMAND("tokenize",
                     "encode JSONL strings to ids (or decode ids) with a tokenizer.json",
                     run_tokenize);

}  // namespace sft::cli
