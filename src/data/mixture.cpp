// Parsing, resolving and reading a `--datasets` mixture (see mixture.h).
#include "data/mixture.h"

#include <cmath>
#include <filesystem>
#include <set>

#include "core/error.h"
#include "data/sources.h"
#include "io/hf_hub.h"
#include "io/options.h"

namespace sft::data {

namespace {

namespace fs = std::filesystem;

std::string where(size_t index, std::string_view field = "") {
  std::string s = "--datasets[" + std::to_string(index) + "]";
  if (!field.empty()) s += " " + std::string(field);
  return s;
}

[[noreturn]] void bad(size_t index, std::string_view field, const std::string& message) {
  fail_usage("args", where(index, field) + ": " + message);
}

std::string string_field(const Json& v, size_t index, const char* field) {
  if (v.is_null()) return "";
  if (!v.is_string()) bad(index, field, "must be a string, got " + std::string(v.type_name()));
  return v.get<std::string>();
}

std::vector<std::string> string_list(const Json& v, size_t index, const std::string& field) {
  std::vector<std::string> out;
  if (v.is_string()) return {v.get<std::string>()};
  if (!v.is_array())
    bad(index, field, "must be a string or a list of strings, got " + std::string(v.type_name()));
  for (const Json& item : v) {
    if (!item.is_string())
      bad(index, field, "must be a list of strings, got a " + std::string(item.type_name()));
    out.push_back(item.get<std::string>());
  }
  return out;
}

MixtureEntry parse_entry(const Json& e, size_t i) {
  if (!e.is_object())
    bad(i, "",
        "must be a mapping such as {\"path\": \"data.jsonl\"}, got " + std::string(e.type_name()));
  static const std::set<std::string> kFields = {"path",  "name",    "data_dir", "data_files",
                                                "split", "columns", "fraction"};
  for (const auto& [key, value] : e.items()) {
    if (!kFields.count(key))
      bad(i, key,
          "unknown field (hint: a dataset takes path, name, data_dir, data_files, split, "
          "columns, fraction)");
  }
  MixtureEntry m;
  if (!e.contains("path") || e["path"].is_null()) bad(i, "path", "is required");
  m.path = string_field(e["path"], i, "path");
  if (m.path.empty()) bad(i, "path", "must not be empty");
  if (e.contains("name")) m.name = string_field(e["name"], i, "name");
  if (e.contains("data_dir")) m.data_dir = string_field(e["data_dir"], i, "data_dir");
  if (e.contains("split") && !e["split"].is_null()) {
    m.split = string_field(e["split"], i, "split");
    if (m.split.empty() || m.split.find_first_of("[+%") != std::string::npos)
      bad(i, "split",
          "'" + m.split +
              "': only a plain split name is supported (no slicing such as "
              "train[:10%]; hint: use fraction to take part of a dataset)");
  }
  if (e.contains("data_files") && !e["data_files"].is_null()) {
    const Json& f = e["data_files"];
    if (f.is_object()) {
      for (const auto& [split, files] : f.items())
        m.data_files.emplace_back(split, string_list(files, i, "data_files." + split));
    } else {
      m.data_files.emplace_back("train", string_list(f, i, "data_files"));
    }
  }
  if (e.contains("columns") && !e["columns"].is_null()) {
    if (!e["columns"].is_array() && !e["columns"].is_string())
      bad(i, "columns", "must be a list of column names");
    m.columns = string_list(e["columns"], i, "columns");
  }
  if (e.contains("fraction") && !e["fraction"].is_null()) {
    if (!e["fraction"].is_number())
      bad(i, "fraction", "must be a number, got " + std::string(e["fraction"].type_name()));
    m.fraction = e["fraction"].get<double>();
    if (!(*m.fraction >= 0) || !std::isfinite(*m.fraction))
      bad(i, "fraction", "must be a share >= 0, got " + e["fraction"].dump());
  }
  return m;
}

// An error's message without its "[component] " prefix, to prepend the entry's index.
std::string message_of(const Error& e) {
  std::string m = e.what();
  const std::string prefix = "[" + e.component() + "] ";
  if (m.starts_with(prefix)) m.erase(0, prefix.size());
  return m;
}

bool is_builder(const std::string& path) {
  return path == "json" || path == "parquet";
}

// Files named by a data_files list, each a file or a glob (relative to `base`).
std::vector<std::string> expand_files(const std::vector<std::string>& patterns,
                                      const fs::path& base, size_t index) {
  std::vector<std::string> out;
  for (const std::string& p : patterns) {
    const std::string full = fs::path(p).is_absolute() ? p : (base / p).lexically_normal().string();
    if (!fs::exists(full) && full.find_first_of("*?[") == std::string::npos)
      fail("data", where(index, "data_files") + ": file not found: " + full);
    DatasetSource source;
    source.name = full;
    try {
      const auto files = find_split_files(source, "train");
      if (files) out.insert(out.end(), files->begin(), files->end());
    } catch (const Error& e) {
      fail("data", where(index, "data_files") + ": " + message_of(e));
    }
  }
  return out;
}

// Python's round() of a non-negative float: to the nearest integer, halves to the even one
// (round(2.5) == 2), whatever the FPU's rounding mode.
uint64_t round_half_even(double x) {
  const double floor = std::floor(x);
  const double diff = x - floor;
  double r = diff < 0.5 ? floor : diff > 0.5 ? floor + 1 : floor + std::fmod(floor, 2.0);
  return static_cast<uint64_t>(r);
}

// Rows of a part's files (Python's len(dataset)): every row the readers produce.
uint64_t count_rows(const std::vector<std::string>& files, bool skip_invalid_rows) {
  RowErrors errors(skip_invalid_rows);
  uint64_t n = 0;
  read_rows(files, errors, [&n](RowJson&&, const RowRef&) { ++n; });
  return n;
}

// The row's keys in order.
std::vector<std::string> keys_of(const RowJson& row) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : row.items()) keys.push_back(k);
  return keys;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& c : v) s += (s.empty() ? "" : ", ") + c;
  return s;
}

// select_columns on one row: only `columns`, in that order. A column missing from a part's
// first row is the dataset lacking it (an error, as datasets raises); missing later (a JSON
// Lines row without the key) it is null, as datasets fills it.
RowJson select_columns(RowJson&& row, const std::vector<std::string>& columns, bool first_row,
                       size_t part, const RowRef& ref) {
  RowJson kept = RowJson::object();
  for (const std::string& c : columns) {
    auto it = row.find(c);
    if (it == row.end() && first_row)
      fail_in_file("data", ref.location(),
                   where(part, "columns") + ": column '" + c +
                       "' is not in the dataset (its columns: " + joined(keys_of(row)) + ")",
                   "name columns the dataset has");
    kept[c] = it == row.end() ? RowJson() : std::move(*it);
  }
  return kept;
}

// datasets' concatenate_datasets would fill a column one part lacks with None.
void check_same_columns(const std::vector<std::string>& columns,
                        const std::vector<std::string>& first_columns, size_t part) {
  if (std::set<std::string>(columns.begin(), columns.end()) ==
      std::set<std::string>(first_columns.begin(), first_columns.end()))
    return;
  fail("data", where(part) + " has the columns [" + joined(columns) + "] but --datasets[0] has [" +
                   joined(first_columns) +
                   "]; concatenating them would leave columns empty (hint: give each dataset "
                   "`columns` naming the same columns)");
}

}  // namespace

std::vector<MixtureEntry> parse_mixture(const Json& datasets) {
  if (!datasets.is_array())
    fail_usage("args",
               "--datasets must be a list of datasets such as '[{\"path\": "
               "\"a.jsonl\"}]' (a `datasets:` list in the --config YAML)");
  std::vector<MixtureEntry> out;
  for (size_t i = 0; i < datasets.size(); ++i) out.push_back(parse_entry(datasets[i], i));
  size_t with_fraction = 0;
  double sum = 0;
  for (const MixtureEntry& m : out) {
    with_fraction += m.fraction.has_value();
    sum += m.fraction.value_or(0);
  }
  if (with_fraction != 0 && with_fraction != out.size()) {
    for (size_t i = 0; i < out.size(); ++i)
      if (!out[i].fraction)
        bad(i, "fraction",
            "is not set while other entries set it (as in TRL, fraction must be set for all "
            "datasets of the mixture or none)");
  }
  if (with_fraction != 0 && !(sum > 0))
    fail_usage("args", "--datasets: the fractions sum to 0 (hint: give each dataset a share > 0)");
  return out;
}

std::vector<std::string> mixture_entry_files(const MixtureEntry& m, size_t index) {
  if (!m.data_files.empty()) {
    fs::path base = ".";
    if (!is_builder(m.path)) {
      base = fs::is_directory(m.path)
                 ? fs::path(m.path)
                 : fs::path(resolve_hub_folder(m.path, HubRepoType::kDataset, "main", m.name));
    }
    if (!m.data_dir.empty()) base /= m.data_dir;
    for (const auto& [split, files] : m.data_files) {
      if (split != m.split) continue;
      auto out = expand_files(files, base, index);
      if (out.empty())
        fail("data", where(index, "data_files") + ": no .jsonl/.json/.parquet files for split '" +
                         m.split + "'");
      return out;
    }
    std::string have;
    for (const auto& [split, files] : m.data_files) have += (have.empty() ? "" : ", ") + split;
    fail("data", where(index, "split") + " '" + m.split + "': data_files name only " + have +
                     (m.data_files.size() == 1 && m.data_files[0].first == "train"
                          ? " (a string or list of data_files is the train split)"
                          : ""));
  }
  if (is_builder(m.path) && !m.data_dir.empty()) {
    // datasets reads data_dir/** then: the folder's files, split by their names.
    try {
      return resolve_split_files({m.data_dir, "", "main"}, m.split);
    } catch (const Error& e) {
      fail(e.component(), where(index, "data_dir") + ": " + message_of(e));
    }
  }
  if (is_builder(m.path))
    fail_usage("args", where(index, "path") + " '" + m.path +
                           "' is a file format: it needs data_files or data_dir (hint: data_files: "
                           "data/train.jsonl, or give the file itself as path)");
  DatasetSource source{m.path, m.name, "main"};
  if (!m.data_dir.empty()) {
    const fs::path folder =
        fs::is_directory(m.path)
            ? fs::path(m.path)
            : fs::path(resolve_hub_folder(m.path, HubRepoType::kDataset, "main", m.name));
    source.name = (folder / m.data_dir).string();
    source.config = "";
    if (!fs::is_directory(source.name))
      fail("data", where(index, "data_dir") + ": no folder " + source.name);
  }
  try {
    return resolve_split_files(source, m.split);
  } catch (const Error& e) {
    fail(e.component(), where(index) + ": " + message_of(e));
  }
}

std::vector<uint64_t> mixture_take_counts(const std::vector<uint64_t>& rows,
                                          const std::vector<double>& fractions) {
  double sum = 0;  // Python's sum(): left to right
  for (double f : fractions) sum += f;
  std::vector<double> weights;
  for (double f : fractions) weights.push_back(f / sum);
  double total = INFINITY;
  for (size_t i = 0; i < rows.size(); ++i)
    if (weights[i] > 0) total = std::min(total, static_cast<double>(rows[i]) / weights[i]);
  std::vector<uint64_t> take;
  for (size_t i = 0; i < rows.size(); ++i) take.push_back(round_half_even(weights[i] * total));
  return take;
}

std::vector<MixturePart> resolve_mixture(const std::vector<MixtureEntry>& entries,
                                         bool skip_invalid_rows) {
  if (entries.empty())
    fail("data", "--datasets is an empty list (hint: give at least one dataset)");
  std::vector<MixturePart> parts;
  for (size_t i = 0; i < entries.size(); ++i)
    parts.push_back({mixture_entry_files(entries[i], i), entries[i].columns, std::nullopt});
  if (entries.front().fraction) {
    std::vector<uint64_t> rows;
    std::vector<double> fractions;
    for (size_t i = 0; i < parts.size(); ++i) {
      rows.push_back(count_rows(parts[i].files, skip_invalid_rows));
      fractions.push_back(*entries[i].fraction);
    }
    const std::vector<uint64_t> take = mixture_take_counts(rows, fractions);
    for (size_t i = 0; i < parts.size(); ++i) parts[i].take = std::min(take[i], rows[i]);
  }
  return parts;
}

void read_mixture_rows(const std::vector<MixturePart>& parts, RowErrors& errors,
                       const RowVisitor& visit) {
  std::vector<std::string> first_columns;  // the first row's columns of the first part
  for (size_t p = 0; p < parts.size(); ++p) {
    const MixturePart& part = parts[p];
    uint64_t taken = 0;
    bool first = true;
    bool reorder = false;  // this part's columns come in another order than the first part's
    // Parts are read whole even when only some rows are kept: a stop would need a reader that
    // can end early, and a mixture's later rows cost only their parse.
    read_rows(part.files, errors, [&](RowJson&& row, const RowRef& ref) {
      if (part.take && taken >= *part.take) return;
      ++taken;
      if (part.columns) row = select_columns(std::move(row), *part.columns, first, p, ref);
      if (first) {
        const std::vector<std::string> columns = keys_of(row);
        if (p == 0) first_columns = columns;
        check_same_columns(columns, first_columns, p);
        reorder = columns != first_columns;
        first = false;
      }
      // concatenate_datasets gives every row the first dataset's column order.
      if (reorder) row = select_columns(std::move(row), first_columns, false, p, ref);
      visit(std::move(row), ref);
    });
  }
}

}  // namespace sft::data
