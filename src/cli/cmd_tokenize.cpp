// `sft tokenize --tokenizer PATH [--add_special_tokens] (--input FILE.jsonl | --text STR)`:
// encodes each input line (a JSON string) and prints one JSON array of ids per line;
// with --decode, reads JSON arrays of ids and prints JSON strings. The reference for
// checking our tokenizer against HF `tokenizers` by hand or from scripts.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include "cli/command_registry.h"
#include "core/error.h"
#include "io/json.h"
#include "text/tokenizer.h"

namespace sft::cli {

namespace {

constexpr const char* kUsage =
    "usage: sft tokenize --tokenizer PATH [--add_special_tokens] (--input FILE.jsonl | --text "
    "STR)\n"
    "       sft tokenize --tokenizer PATH --decode [--skip_special_tokens] (--input FILE.jsonl | "
    "--text '[ids]')\n\n"
    "PATH is a folder holding tokenizer.json, or the file itself.\n"
    "  --input FILE           one JSON string per line (JSON arrays of ids with --decode); - is "
    "stdin\n"
    "  --text STR             one input given on the command line (raw text, not JSON)\n"
    "  --add_special_tokens   apply the post-processor (e.g. add <bos>)\n"
    "  --split_special_tokens tokenize special tokens' text as ordinary text\n"
    "  --decode               ids → text\n"
    "  --skip_special_tokens  with --decode: drop special tokens\n";

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
  std::string path, input, text;
  bool have_text = false, add_special = false, decode = false, skip_special = false,
       split_special = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) fail("tokenize", a + " needs a value\n" + kUsage);
      return args[++i];
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--tokenizer")
      path = value();
    else if (a == "--input")
      input = value();
    else if (a == "--text")
      text = value(), have_text = true;
    else if (a == "--add_special_tokens")
      add_special = true;
    else if (a == "--split_special_tokens")
      split_special = true;
    else if (a == "--decode")
      decode = true;
    else if (a == "--skip_special_tokens")
      skip_special = true;
    else
      fail("tokenize", "unknown argument '" + a + "'\n" + kUsage);
  }
  if (path.empty() || (input.empty() == !have_text))
    fail("tokenize", std::string("give --tokenizer and exactly one of --input/--text\n") + kUsage);
  text::Tokenizer tok = text::Tokenizer::from_file(path);
  tok.set_split_special_tokens(split_special);

  auto handle = [&](const std::string& line, const std::string& where, bool raw) {
    if (decode) {
      std::string out = tok.decode(parse_ids(line, where), skip_special);
      std::cout << Json(out).dump(-1, ' ', false, Json::error_handler_t::replace) << "\n";
    } else {
      std::string s = line;
      if (!raw) {
        Json j = parse_json_strict(line, "tokenize", where);
        if (!j.is_string()) fail("tokenize", where + ": expected a JSON string");
        s = j.get<std::string>();
      }
      std::cout << ids_json(tok.encode(s, add_special)) << "\n";
    }
  };
  if (have_text) {
    handle(text, "--text", !decode);
    return 0;
  }
  std::ifstream file;
  std::istream* in = &std::cin;
  if (input != "-") {
    file.open(input);
    if (!file) fail("tokenize", "cannot open '" + input + "': " + errno_text(errno));
    in = &file;
  }
  std::string line;
  for (size_t n = 1; std::getline(*in, line); ++n) {
    if (line.empty()) continue;
    handle(line, input + ": line " + std::to_string(n), false);
  }
  return 0;
}

SFT_REGISTER_COMMAND("tokenize",
                     "encode JSONL strings to ids (or decode ids) with a tokenizer.json",
                     run_tokenize);

}  // namespace sft::cli
