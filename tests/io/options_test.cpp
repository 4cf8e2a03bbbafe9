#include "io/options.h"

#include <gtest/gtest.h>

#include <fstream>

#include "core/error.h"
#include "test_paths.h"

namespace sft {

namespace {

struct Fields {
  bool flag = false;
  std::optional<bool> maybe;
  int64_t count = 3;
  std::optional<int64_t> limit = 7;
  double rate = 0.5;
  std::string name = "x";
  std::vector<std::string> list;
  Json kwargs;
};

OptionSet options_for(Fields& f) {
  OptionSet o("demo");
  o.add_bool("flag", &f.flag, "A", "a flag");
  o.add_optional_bool("maybe", &f.maybe, "A", "an optional flag");
  o.add_int("count", &f.count, "A", "a count");
  o.add_optional_int("limit", &f.limit, "B", "a limit");
  o.add_float("rate", &f.rate, "B", "a rate");
  o.add_string("name", &f.name, "B", "a name");
  o.add_string_list("list", &f.list, "B", "a list");
  o.add_json("kwargs", &f.kwargs, "B", "json");
  return o;
}

std::string error_of(const std::vector<std::string>& tokens) {
  Fields f;
  try {
    options_for(f).parse(tokens);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Options, ParsesEveryForm) {
  Fields f;
  OptionSet o = options_for(f);
  auto rest = o.parse({"--flag", "--maybe", "false", "--count=12", "--limit", "None", "--rate",
                       "2.0e-5", "--name", "<|im_end|>", "--list", "a, b,c", "--kwargs",
                       R"({"min_lr": 1e-6})", "positional"});
  EXPECT_TRUE(f.flag);
  EXPECT_EQ(f.maybe, false);
  EXPECT_EQ(f.count, 12);
  EXPECT_FALSE(f.limit.has_value());
  EXPECT_DOUBLE_EQ(f.rate, 2e-5);
  EXPECT_EQ(f.name, "<|im_end|>");
  EXPECT_EQ(f.list, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_DOUBLE_EQ(f.kwargs["min_lr"].get<double>(), 1e-6);
  EXPECT_EQ(rest, std::vector<std::string>{"positional"});
  EXPECT_TRUE(o.was_set("rate"));
  EXPECT_FALSE(o.was_set("nothing"));
}

TEST(Options, BareBooleanBeforeAnotherFlag) {
  Fields f;
  options_for(f).parse({"--flag", "--count", "4"});
  EXPECT_TRUE(f.flag);
  EXPECT_EQ(f.count, 4);
}

TEST(Options, ErrorsNameTheFlagAndSuggest) {
  EXPECT_EQ(
      error_of({"--cuont", "3"}),
      "[args] sft demo: unknown option --cuont (did you mean --count? see `sft demo --help`)");
  EXPECT_EQ(error_of({"--count", "many"}),
            "[args] command line: --count expects an integer, got 'many'");
  EXPECT_EQ(error_of({"--flag", "maybe"}),
            "[args] command line: --flag expects true or false, got 'maybe'");
  EXPECT_EQ(error_of({"--count", "None"}),
            "[args] command line: --count expects an integer, got 'None'");
  EXPECT_NE(error_of({"--kwargs", "[1]"}).find("expects a JSON object"), std::string::npos);
  EXPECT_EQ(error_of({"--rate"}), "[args] sft demo: --rate needs a value");
}

// Mistakes are usage errors (exit 2) on the command line and in a --config file alike; only a
// config file that cannot be read is not.
TEST(Options, CommandLineAndYamlMistakesAreUsageErrors) {
  Fields f;
  for (const std::vector<std::string>& tokens : std::vector<std::vector<std::string>>{
           {"--cuont", "3"}, {"--count", "many"}, {"--rate"}, {"--count", "None"}}) {
    EXPECT_THROW(options_for(f).parse(tokens), UsageError) << tokens[0];
  }
  const std::string dir = test::fresh_output_dir("options_usage");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"count: many\n", "c.yaml: line 1: --count expects an integer, got 'many'"},
      {"count: null\n", "c.yaml: line 1: --count cannot be None"},
      {"cuont: 3\n", "c.yaml: line 1: unknown option 'cuont' (hint: did you mean 'count'?)"},
      {"- 3\n", "c.yaml: expected a mapping of option names to values"},
      {"count: [1, 2\n", "invalid YAML"}};
  for (const auto& [yaml, message] : cases) {
    std::ofstream(dir + "/c.yaml") << yaml;
    try {
      options_for(f).parse({"--config", dir + "/c.yaml"});
      ADD_FAILURE() << "a bad YAML file must fail: " << yaml;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    } catch (const Error& e) {
      ADD_FAILURE() << "not a usage error: " << e.what();
    }
  }
  try {
    options_for(f).parse({"--config", dir + "/missing.yaml"});
    ADD_FAILURE() << "a missing config file must fail";
  } catch (const UsageError& e) {
    ADD_FAILURE() << "an unreadable file is not a usage error: " << e.what();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot read the config file"), std::string::npos);
  }
}

// YAML integers stay integers: in a list ([2, 3] is "2,3", not "2.0,3.0") and in JSON values.
TEST(Options, YamlIntegersStayIntegers) {
  Fields f;
  const std::string dir = test::fresh_output_dir("options_yaml_ints");
  std::ofstream(dir + "/c.yaml")
      << "list: [2, 3, 0.5, x]\nkwargs: {num_cycles: 2, min_lr: 1.0e-6}\n";
  options_for(f).parse({"--config", dir + "/c.yaml"});
  EXPECT_EQ(f.list, (std::vector<std::string>{"2", "3", "0.5", "x"}));
  EXPECT_TRUE(f.kwargs["num_cycles"].is_number_integer()) << f.kwargs.dump();
  EXPECT_EQ(f.kwargs.dump(), R"({"min_lr":1e-06,"num_cycles":2})");
}

// HfArgumentParser's forms: dash spellings, lists as separate words up to the next flag,
// --no_X for a boolean.
TEST(Options, AcceptsHfArgumentParserForms) {
  Fields f;
  OptionSet o = options_for(f);
  auto rest = o.parse({"--list", "q_proj", "v_proj", "--count=4", "--no-flag", "--rate", "1"});
  EXPECT_EQ(f.list, (std::vector<std::string>{"q_proj", "v_proj"}));
  EXPECT_EQ(f.count, 4);
  EXPECT_FALSE(f.flag);
  EXPECT_TRUE(rest.empty());
  Fields g;
  options_for(g).parse({"--flag", "--no_flag"});
  EXPECT_FALSE(g.flag);
  Fields h;
  options_for(h).parse({"--list=a,b", "--name", "n"});
  EXPECT_EQ(h.list, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(o.has("kw-args") == false);
  EXPECT_TRUE(o.has("kwargs"));
}

TEST(Options, SuggestionsAreSensible) {
  struct Many {
    bool b = false;
    std::optional<std::string> s;
    int64_t i = 0;
  } m;
  OptionSet o("demo");
  o.add_optional_string("eos_token", &m.s, "A", "");
  o.add_int("per_device_train_batch_size", &m.i, "A", "");
  o.add_int("per_device_eval_batch_size", &m.i, "A", "");
  o.add_int("logging_steps", &m.i, "A", "");
  o.add_bool("logging_first_step", &m.b, "A", "");
  o.add_int("max_new_tokens", &m.i, "A", "");
  o.add_int("learning_rate", &m.i, "A", "");
  EXPECT_EQ(o.closest("push_to_hub"), "");  // nothing close: no far-fetched --eos_token
  EXPECT_EQ(o.closest("logging_step"), "logging_steps");                    // a prefix
  EXPECT_EQ(o.closest("max_new_token"), "max_new_tokens");                  // a prefix
  EXPECT_EQ(o.closest("train_batch_size"), "per_device_train_batch_size");  // a substring
  EXPECT_EQ(o.closest("eval_batch"), "per_device_eval_batch_size");         // a substring
  EXPECT_EQ(o.closest("batch_size_eval"), "per_device_eval_batch_size");    // shared words
  EXPECT_EQ(o.closest("lerning_rate"), "learning_rate");                    // a slip
  EXPECT_EQ(o.closest("eos-tokn"), "eos_token");
}

TEST(Options, AsksForHelpOnlyWhereAFlagStands) {
  Fields f;
  const OptionSet o = options_for(f);
  EXPECT_TRUE(o.asks_for_help({"--count", "3", "--help"}));
  EXPECT_TRUE(o.asks_for_help({"-h"}));
  EXPECT_TRUE(o.asks_for_help({"--flag", "-h"}));      // a boolean's value is never -h
  EXPECT_TRUE(o.asks_for_help({"--nmae", "--help"}));  // even after a mistake
  EXPECT_FALSE(o.asks_for_help({"--name", "-h"}));     // the value of --name
  EXPECT_FALSE(o.asks_for_help({"--name=--help"}));
  EXPECT_FALSE(o.asks_for_help({"--count", "3"}));
}

TEST(Options, YamlConfigThenFlagsOverride) {
  const std::string dir = test::fresh_output_dir("options_yaml");
  std::ofstream(dir + "/c.yaml")
      << "count: 9\nrate: 1.0e-4\nflag: true\nlist: [x, y]\nkwargs:\n  num_cycles: 2\n"
         "limit: null\nname: from_yaml\n";
  Fields f;
  options_for(f).parse({"--name", "from_cli", "--config", dir + "/c.yaml"});
  EXPECT_EQ(f.count, 9);
  EXPECT_DOUBLE_EQ(f.rate, 1e-4);
  EXPECT_TRUE(f.flag);
  EXPECT_EQ(f.list, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(f.kwargs["num_cycles"], 2);
  EXPECT_FALSE(f.limit.has_value());
  EXPECT_EQ(f.name, "from_cli");  // the command line wins whatever the order
}

TEST(Options, YamlErrorsNameFileAndLine) {
  const std::string dir = test::fresh_output_dir("options_yaml_bad");
  std::ofstream(dir + "/c.yaml") << "count: 9\nrat: 1.0\n";
  const std::string message = error_of({"--config", dir + "/c.yaml"});
  EXPECT_EQ(message,
            "[args] " + dir + "/c.yaml: line 2: unknown option 'rat' (hint: did you mean 'rate'?)");
  std::ofstream(dir + "/d.yaml") << "count: [1, 2\n";
  EXPECT_NE(error_of({"--config", dir + "/d.yaml"}).find("invalid YAML"), std::string::npos);
}

TEST(Options, HelpIsGrouped) {
  Fields f;
  const std::string help = options_for(f).help();
  EXPECT_NE(help.find("\nA:\n  --flag"), std::string::npos) << help;
  EXPECT_NE(help.find("(default: 7)"), std::string::npos) << help;
  EXPECT_LT(help.find("A:"), help.find("B:"));
}

// A help text that states its default gets no second "(default: None)".
TEST(Options, HelpShowsOneDefaultPerOption) {
  std::optional<int64_t> threads;
  OptionSet o("demo");
  o.add_optional_int("num_threads", &threads, "A", "CPU threads (default: all cores)");
  const std::string help = o.help();
  EXPECT_NE(help.find("CPU threads (default: all cores)\n"), std::string::npos) << help;
  EXPECT_EQ(help.find("None"), std::string::npos) << help;
}

}  // namespace sft
