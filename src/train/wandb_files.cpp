// The files/ folder of a W&B offline run (see wandb_files.h).
#include "train/wandb_files.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <ctime>

namespace sft {

namespace {

// A JSON value as YAML flow: JSON is YAML but for floats such as 2e-05, which YAML 1.1 reads
// as strings without a decimal point.
std::string yaml_flow(const Json& v) {
  if (v.is_number_float()) {
    std::string text = v.dump();
    if (text.find_first_of(".n") == std::string::npos) {  // not 0.5, nan or inf
      const size_t e = text.find('e');
      text.insert(e == std::string::npos ? text.size() : e, ".0");
    }
    return text;
  }
  if (v.is_array()) {
    std::string out = "[";
    for (const Json& item : v) out.append(out.size() > 1 ? ", " : "").append(yaml_flow(item));
    return out.append("]");
  }
  if (v.is_object()) {
    std::string out = "{";
    for (const auto& [k, item] : v.items())
      out.append(out.size() > 1 ? ", " : "")
          .append(Json(k).dump())
          .append(": ")
          .append(yaml_flow(item));
    return out.append("}");
  }
  return v.dump();  // null, booleans, integers, strings (JSON's escapes are YAML's)
}

// A mapping key: plain when it is a simple name (learning_rate, model/num_parameters), else
// quoted.
std::string yaml_key(const std::string& key) {
  bool plain = !key.empty();
  for (char c : key)
    plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '/' ||
                      c == '.' || c == '-');
  return plain ? key : Json(key).dump();
}

}  // namespace

std::string wandb_config_yaml(const Json& config) {
  std::string out = "_wandb:\n  value: {}\n";
  for (const auto& [key, value] : config.items()) {
    if (key == "_wandb") continue;
    out.append(yaml_key(key)).append(":\n  value: ").append(yaml_flow(value)).append("\n");
  }
  return out;
}

std::string wandb_iso_time(double unix_s) {
  const double whole = std::floor(unix_s);
  const auto t = static_cast<std::time_t>(whole);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char date[32], out[48];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(out, sizeof out, "%s.%06dZ", date,
                static_cast<int>(std::min(999999.0, std::round((unix_s - whole) * 1e6))));
  return out;
}

Json wandb_metadata(const WandbEnvironment& env) {
  return Json{{"os", env.os},
              {"program", env.program},
              {"host", env.host},
              {"executable", env.executable},
              {"root", env.root},
              {"startedAt", wandb_iso_time(env.started_at)},
              {"cpu_count_logical", env.cpu_count},
              // As the SDK writes it: a uint64 of its protobuf, a string in JSON.
              {"memory", {{"total", std::to_string(env.memory_total)}}}};
}

}  // namespace sft
