#include "io/options.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <sstream>

#include "core/edit_distance.h"
#include "core/error.h"

namespace sft {

namespace {

constexpr std::string_view kComponent = "args";
constexpr std::string_view kCommandLine = "command line";

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool is_none(const std::string& text) {
  const std::string l = lower(text);
  return l == "none" || l == "null" || l == "~";
}

// Thrown by the converters; apply() adds the option name and where the value came from.
struct BadValue {
  std::string expected;
};

bool to_bool(const std::string& text) {
  const std::string l = lower(text);
  if (l == "true" || l == "1" || l == "yes" || l == "on") return true;
  if (l == "false" || l == "0" || l == "no" || l == "off") return false;
  throw BadValue{"true or false"};
}

int64_t to_int(const std::string& text) {
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE) {
    // HF accepts floats with an integral value for some int flags (e.g. "500.0"); so do we.
    char* fend = nullptr;
    double d = std::strtod(text.c_str(), &fend);
    if (!text.empty() && *fend == '\0' && d == static_cast<double>(static_cast<int64_t>(d))) {
      return static_cast<int64_t>(d);
    }
    throw BadValue{"an integer"};
  }
  return v;
}

double to_float(const std::string& text) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0') throw BadValue{"a number"};
  return v;
}

std::vector<std::string> to_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// HfArgumentParser registers `--output-dir` beside `--output_dir`; one spelling here.
std::string flag_name(std::string_view raw) {
  std::string name(raw);
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

std::vector<std::string> words_of(const std::string& name) {
  std::vector<std::string> out;
  std::stringstream in(name);
  std::string word;
  while (std::getline(in, word, '_')) {
    if (!word.empty()) out.push_back(word);
  }
  return out;
}

// A YAML node as the text the command line would carry (lists comma-joined, maps as JSON).
Json yaml_to_json(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Sequence: {
      Json out = Json::array();
      for (const YAML::Node& item : node) out.push_back(yaml_to_json(item));
      return out;
    }
    case YAML::NodeType::Map: {
      Json out = Json::object();
      for (const auto& kv : node) out[kv.first.as<std::string>()] = yaml_to_json(kv.second);
      return out;
    }
    case YAML::NodeType::Null:
      return nullptr;
    default: {
      const std::string text = node.as<std::string>();
      // Keep numbers typed inside JSON-valued options ({"min_lr": 1e-6}), integers as integers
      // (a list [2, 3] is "2,3", not "2.0,3.0").
      if (!text.empty() && node.Tag() != "!") {
        char* end = nullptr;
        errno = 0;
        const long long i = std::strtoll(text.c_str(), &end, 10);
        if (*end == '\0' && errno == 0) return static_cast<int64_t>(i);
        const double d = std::strtod(text.c_str(), &end);
        if (*end == '\0') return d;
      }
      if (lower(text) == "true") return true;
      if (lower(text) == "false") return false;
      return text;
    }
  }
}

// A mistake in a --config file's content: a usage error (exit 2) as the same mistake in a flag,
// worded as every error in a user's file (core/error.h).
[[noreturn]] void fail_usage_in_file(const FileLocation& where, std::string_view problem,
                                     std::string_view hint) {
  fail_usage(kComponent, describe_file_problem(where, problem, hint));
}

template <typename T>
Json optional_json(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

// A text option's value (as add_text stores it) typed as its option type.
Json json_of_text(const std::string& text, OptionType type) {
  if (text == "None") return nullptr;
  switch (type) {
    case OptionType::kBool:
      return text == "true";
    case OptionType::kInt:
      return std::stoll(text);
    case OptionType::kFloat:
      return std::stod(text);
    case OptionType::kString:
      return text == "\"\"" ? std::string() : text;
    case OptionType::kStringList: {
      Json list = Json::array();
      if (text == "\"\"") return list;  // an empty default: [], not [""]
      for (size_t start = 0; start <= text.size();) {
        const size_t comma = std::min(text.find(',', start), text.size());
        list.push_back(text.substr(start, comma - start));
        start = comma + 1;
      }
      return list;
    }
    case OptionType::kJson:
      return Json::parse(text);
  }
  return text;
}

}  // namespace

void fail_usage(std::string_view component, std::string_view message) {
  throw UsageError(component, message);
}

Option& OptionSet::add(Option option) {
  options_.push_back(std::move(option));
  return options_.back();
}

void OptionSet::add_bool(std::string name, bool* field, std::string group, std::string help) {
  add({name, group, help, OptionType::kBool, false,
       [field](const std::optional<std::string>& t) { *field = to_bool(*t); },
       [field] { return std::string(*field ? "true" : "false"); },
       [field] { return Json(*field); }});
}

void OptionSet::add_optional_bool(std::string name, std::optional<bool>* field, std::string group,
                                  std::string help) {
  add({name, group, help, OptionType::kBool, true,
       [field](const std::optional<std::string>& t) {
         *field = t ? std::optional<bool>(to_bool(*t)) : std::nullopt;
       },
       [field] { return *field ? std::string(**field ? "true" : "false") : std::string("None"); },
       [field] { return optional_json(*field); }});
}

void OptionSet::add_int(std::string name, int64_t* field, std::string group, std::string help) {
  add({name, group, help, OptionType::kInt, false,
       [field](const std::optional<std::string>& t) { *field = to_int(*t); },
       [field] { return std::to_string(*field); }, [field] { return Json(*field); }});
}

void OptionSet::add_optional_int(std::string name, std::optional<int64_t>* field, std::string group,
                                 std::string help, std::string none_word) {
  add({name, group, help, OptionType::kInt, true,
       [field, none_word](const std::optional<std::string>& t) {
         const bool none = !t || (!none_word.empty() && lower(*t) == none_word);
         *field = none ? std::nullopt : std::optional<int64_t>(to_int(*t));
       },
       [field] { return *field ? std::to_string(**field) : std::string("None"); },
       [field] { return optional_json(*field); }});
}

void OptionSet::add_float(std::string name, double* field, std::string group, std::string help) {
  add({name, group, help, OptionType::kFloat, false,
       [field](const std::optional<std::string>& t) { *field = to_float(*t); },
       [field] {
         std::ostringstream out;
         out << *field;
         return out.str();
       },
       [field] { return Json(*field); }});
}

void OptionSet::add_optional_float(std::string name, std::optional<double>* field,
                                   std::string group, std::string help) {
  add({name, group, help, OptionType::kFloat, true,
       [field](const std::optional<std::string>& t) {
         *field = t ? std::optional<double>(to_float(*t)) : std::nullopt;
       },
       [field] {
         if (!*field) return std::string("None");
         std::ostringstream out;
         out << **field;
         return out.str();
       },
       [field] { return optional_json(*field); }});
}

void OptionSet::add_string(std::string name, std::string* field, std::string group,
                           std::string help) {
  add({name, group, help, OptionType::kString, false,
       [field](const std::optional<std::string>& t) { *field = *t; },
       [field] { return field->empty() ? std::string("\"\"") : *field; },
       [field] { return Json(*field); }});
}

void OptionSet::add_optional_string(std::string name, std::optional<std::string>* field,
                                    std::string group, std::string help) {
  add({name, group, help, OptionType::kString, true,
       [field](const std::optional<std::string>& t) { *field = t; },
       [field] { return field->value_or("None"); }, [field] { return optional_json(*field); }});
}

void OptionSet::add_string_list(std::string name, std::vector<std::string>* field,
                                std::string group, std::string help) {
  add({name, group, help, OptionType::kStringList, true,
       [field](const std::optional<std::string>& t) {
         *field = t ? to_list(*t) : std::vector<std::string>{};
       },
       [field] {
         std::string out;
         for (const std::string& s : *field) out += (out.empty() ? "" : ",") + s;
         return out.empty() ? std::string("None") : out;
       },
       [field] { return field->empty() ? Json(nullptr) : Json(*field); }});
}

void OptionSet::add_json(std::string name, Json* field, std::string group, std::string help,
                         bool allow_array) {
  add({name, group, help, OptionType::kJson, true,
       [field, allow_array](const std::optional<std::string>& t) {
         if (!t) {
           *field = nullptr;
           return;
         }
         const char* expected = allow_array ? "a JSON object or array such as '[{\"path\": \"a\"}]'"
                                            : "a JSON object such as '{\"key\": 1}'";
         try {
           *field = Json::parse(*t);
         } catch (const Json::exception&) {
           throw BadValue{expected};
         }
         if (!field->is_object() && !(allow_array && field->is_array())) throw BadValue{expected};
       },
       [field] { return field->is_null() ? std::string("None") : field->dump(); },
       [field] { return *field; }});
}

void OptionSet::add_text(std::string name, OptionType type,
                         std::map<std::string, std::string>* store, std::string group,
                         std::string help, std::string default_text) {
  add({name, group, help, type, true,
       [store, name, type](const std::optional<std::string>& t) {
         if (!t) {
           (*store)[name] = "None";
           return;
         }
         switch (type) {
           case OptionType::kBool:
             (*store)[name] = to_bool(*t) ? "true" : "false";
             return;
           case OptionType::kInt:
             (*store)[name] = std::to_string(to_int(*t));
             return;
           case OptionType::kFloat: {
             std::ostringstream out;
             out << to_float(*t);
             (*store)[name] = out.str();
             return;
           }
           case OptionType::kJson:
             try {
               (*store)[name] = Json::parse(*t).dump();
             } catch (const Json::exception&) {
               throw BadValue{"JSON such as '{\"key\": 1}'"};
             }
             return;
           default:
             (*store)[name] = *t;
         }
       },
       [store, name, default_text] {
         auto it = store->find(name);
         if (it != store->end()) return it->second;
         return default_text.empty() ? std::string("\"\"") : default_text;
       },
       nullptr});
  Option& added = options_.back();
  added.value = [show = added.show, type] { return json_of_text(show(), type); };
}

const Option* OptionSet::find(std::string_view raw) const {
  const std::string name = flag_name(raw);
  for (const Option& o : options_) {
    if (o.name == name) return &o;
  }
  return nullptr;
}

std::string OptionSet::closest(std::string_view raw) const {
  const std::string name = flag_name(raw);
  if (name.empty()) return "";
  // A one-letter slip beats everything else (--cuont → --count).
  std::string best;
  size_t best_distance = SIZE_MAX;
  for (const Option& o : options_) {
    const size_t d = edit_distance(name, o.name);
    if (d < best_distance) {
      best_distance = d;
      best = o.name;
    }
  }
  if (best_distance <= 1) return best;
  // Then a prefix either way (--logging_step, --warmup_ratios), the closest in length.
  auto pick = [&](auto matches) {
    std::string found;
    size_t found_gap = SIZE_MAX;
    for (const Option& o : options_) {
      if (!matches(o.name)) continue;
      const size_t gap =
          o.name.size() > name.size() ? o.name.size() - name.size() : name.size() - o.name.size();
      if (gap < found_gap) {
        found_gap = gap;
        found = o.name;
      }
    }
    return found;
  };
  std::string found =
      pick([&](const std::string& o) { return o.rfind(name, 0) == 0 || name.rfind(o, 0) == 0; });
  if (!found.empty()) return found;
  // A name that contains the typed one (--batch_size → --per_device_train_batch_size), if the
  // typed one is a word or more, not a fragment such as "to".
  if (name.size() >= 4) {
    found = pick([&](const std::string& o) { return o.find(name) != std::string::npos; });
    if (!found.empty()) return found;
  }
  // Shared words (--eval_batch_size → --per_device_eval_batch_size); short words such as
  // "to" or "of" do not count, and ties go to the smaller edit distance.
  const std::vector<std::string> words = words_of(name);
  size_t best_shared = 0;
  found.clear();
  size_t found_distance = SIZE_MAX;
  for (const Option& o : options_) {
    size_t shared = 0;
    for (const std::string& w : words_of(o.name)) {
      if (w.size() >= 3 && std::find(words.begin(), words.end(), w) != words.end()) ++shared;
    }
    const size_t d = edit_distance(name, o.name);
    if (shared > best_shared || (shared == best_shared && shared > 0 && d < found_distance)) {
      best_shared = shared;
      found_distance = d;
      found = o.name;
    }
  }
  // One shared word is enough only when it is most of what was typed.
  if (best_shared >= 2 || (best_shared == 1 && words.size() <= 2)) return found;
  // Last, a plain misspelling (--lerning_rat): at most a third of the letters differ.
  if (best_distance * 3 <= name.size()) return best;
  return "";
}

std::string OptionSet::unknown_hint(const std::string& name) const {
  const std::string guess = closest(name);
  return "unknown option --" + name + " (" +
         (guess.empty() ? "" : "did you mean --" + guess + "? ") + "see `sft " + command_ +
         " --help`)";
}

void OptionSet::apply(const Option& option, const std::optional<std::string>& text,
                      const std::string& source) {
  if (!text && !option.optional) {
    // The same usage error (exit 2) from the command line or a --config file.
    fail_usage(kComponent, source + ": --" + option.name + " cannot be None");
  }
  try {
    option.set_text(text);
  } catch (const BadValue& bad) {
    fail_usage(kComponent, source + ": --" + option.name + " expects " + bad.expected + ", got '" +
                               text.value_or("") + "'");
  }
  set_.insert(option.name);
}

std::vector<std::string> OptionSet::parse(const std::vector<std::string>& tokens) {
  // The YAML file goes first wherever --config appears, so that flags always win.
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] == "--config" && i + 1 < tokens.size()) apply_yaml_file(tokens[i + 1]);
    if (tokens[i].rfind("--config=", 0) == 0) apply_yaml_file(tokens[i].substr(9));
  }
  std::vector<std::string> positional;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string& token = tokens[i];
    if (token.rfind("--", 0) != 0 || token == "--") {
      positional.push_back(token);
      continue;
    }
    std::string name = token.substr(2);
    std::optional<std::string> value;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    name = flag_name(name);
    if (name == "config") {
      if (!value) ++i;
      continue;
    }
    const Option* option = find(name);
    // HfArgumentParser's `--no_gradient_checkpointing` for a boolean.
    if (option == nullptr && name.rfind("no_", 0) == 0 && !value) {
      const Option* negated = find(name.substr(3));
      if (negated != nullptr && negated->type == OptionType::kBool) {
        apply(*negated, std::string("false"), std::string(kCommandLine));
        continue;
      }
    }
    if (option == nullptr) fail_usage(kComponent, "sft " + command_ + ": " + unknown_hint(name));
    auto is_value = [&](size_t at) { return at < tokens.size() && tokens[at].rfind("--", 0) != 0; };
    if (!value && option->type == OptionType::kStringList && is_value(i + 1)) {
      // nargs='+': every word up to the next --flag (commas still split, as before).
      std::string joined;
      while (is_value(i + 1)) joined += (joined.empty() ? "" : ",") + tokens[++i];
      value = joined;
    }
    if (!value) {
      const bool next_is_value = is_value(i + 1);
      if (option->type == OptionType::kBool && !next_is_value) {
        value = "true";
      } else if (!next_is_value) {
        fail_usage(kComponent, "sft " + command_ + ": --" + name + " needs a value");
      } else {
        value = tokens[++i];
      }
    }
    apply(*option, is_none(*value) && option->optional ? std::nullopt : value,
          std::string(kCommandLine));
  }
  return positional;
}

bool OptionSet::asks_for_help(const std::vector<std::string>& tokens) const {
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string& token = tokens[i];
    if (token == "--help" || token == "-h") return true;
    if (token.rfind("--", 0) != 0 || token.find('=') != std::string::npos) continue;
    // As parse(): a flag with a value takes the next token unless that is a flag. A boolean's
    // optional value is never `-h`, so `--mask -h` asks for help.
    const std::string name = flag_name(token.substr(2));
    const Option* option = find(name);
    const bool takes_value = name == "config" || (option && option->type != OptionType::kBool);
    const bool takes_words = option && option->type == OptionType::kStringList;
    while (takes_value && i + 1 < tokens.size() && tokens[i + 1].rfind("--", 0) != 0) {
      ++i;
      if (!takes_words) break;
    }
  }
  return false;
}

void OptionSet::apply_yaml_file(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    fail_in_file(kComponent, {path, ""}, "cannot read the config file",
                 "check the path given to --config");
  } catch (const YAML::Exception& e) {
    fail_usage_in_file({path, "line " + std::to_string(e.mark.line + 1)}, "invalid YAML: " + e.msg,
                       "check indentation and quoting");
  }
  if (!root.IsMap()) {
    fail_usage_in_file(
        {path, ""}, "expected a mapping of option names to values",
        "write one `name: value` per line, with the names of the command-line flags");
  }
  for (const auto& kv : root) {
    const std::string name = flag_name(kv.first.as<std::string>());
    const std::string place = "line " + std::to_string(kv.first.Mark().line + 1);
    const Option* option = find(name);
    if (option == nullptr) {
      const std::string guess = closest(name);
      fail_usage_in_file({path, place}, "unknown option '" + name + "'",
                         guess.empty() ? "see `sft " + command_ + " --help` for the option names"
                                       : "did you mean '" + guess + "'?");
    }
    const Json value = yaml_to_json(kv.second);
    std::optional<std::string> text;
    if (value.is_string()) {
      text = value.get<std::string>();
      if (is_none(*text) && option->optional) text.reset();
    } else if (value.is_array() && option->type == OptionType::kJson) {
      text = value.dump();
    } else if (value.is_array()) {
      std::string joined;
      for (const Json& item : value)
        joined += (joined.empty() ? "" : ",") +
                  (item.is_string() ? item.get<std::string>() : item.dump());
      text = joined;
    } else if (!value.is_null()) {
      text = kv.second.IsScalar() ? kv.second.as<std::string>() : value.dump();
    }
    apply(*option, text, path + ": " + place);
  }
}

std::string OptionSet::help(const std::set<std::string>* only) const {
  auto shown = [only](const Option& o) { return only == nullptr || only->count(o.name) != 0; };
  std::vector<std::string> groups;
  for (const Option& o : options_) {
    if (!shown(o)) continue;
    if (std::find(groups.begin(), groups.end(), o.group) == groups.end()) groups.push_back(o.group);
  }
  std::ostringstream out;
  for (const std::string& group : groups) {
    out << "\n" << group << ":\n";
    for (const Option& o : options_) {
      if (o.group != group || !shown(o)) continue;
      std::string flag = "  --" + o.name;
      out << flag << std::string(flag.size() < 34 ? 34 - flag.size() : 1, ' ') << o.help;
      // A help text that explains its default ("(default: all cores)") says it better than
      // the stored value ("None"): one default per option.
      if (o.help.find("(default: ") == std::string::npos) out << " (default: " << o.show() << ")";
      out << "\n";
    }
  }
  return out.str();
}

}  // namespace sft
