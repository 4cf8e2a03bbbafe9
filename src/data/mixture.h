// `--datasets`: a mixture of datasets as TRL 1.16's DatasetMixtureConfig / get_dataset builds it.
//
// Each entry is a DatasetConfig {path, name, data_dir, data_files, split = "train", columns,
// fraction}, given as a JSON array on the command line or a `datasets:` YAML list. An entry
// resolves to files through the same sources as --dataset_name (sources.h):
//   path "json" / "parquet"   datasets' packaged builders: the files are `data_files`
//                             (a path, glob or list; or a mapping split → files), relative to
//                             data_dir when given; without data_files, data_dir's files
//   path a file/glob/folder/Hub id  as --dataset_name with name = its config, data_dir a
//                             sub-folder, data_files paths relative to that folder
// Rows of an entry keep only `columns` when given, in that order (select_columns). With
// `fraction` (all entries or none): weights = fraction / sum, total = min(rows_i / weight_i)
// over weights > 0, and each entry keeps its first round(weight_i · total) rows (Python's
// round: half to even). Entries are concatenated in order, before encoding and packing.
// Every entry must end up with the same columns: datasets' concatenate_datasets would fill a
// column missing in one entry with None, which no SFT format accepts; rows of later entries
// take the first entry's column order, as concatenate_datasets gives them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "data/row_reader.h"
#include "io/json.h"

namespace sft::data {

struct MixtureEntry {
  std::string path;
  std::string name;      // the config ("" = none)
  std::string data_dir;  // "" = none
  // Files per split: a string or list is the "train" split's (as datasets reads it).
  std::vector<std::pair<std::string, std::vector<std::string>>> data_files;
  std::string split = "train";
  std::optional<std::vector<std::string>> columns;
  std::optional<double> fraction;
};

// Parses a `datasets` value (a JSON array of objects); throws UsageError("[args] --datasets[i]
// field: ...") for a wrong type, an unknown field or a missing path, and for fractions set on
// only some entries, negative, or all zero.
std::vector<MixtureEntry> parse_mixture(const Json& datasets);

// One entry's data files (sources.h's rules); throws "[data] --datasets[i] ..." when none.
std::vector<std::string> mixture_entry_files(const MixtureEntry& entry, size_t index);

// TRL's fraction rule: rows to keep of each entry, from the entries' row counts.
std::vector<uint64_t> mixture_take_counts(const std::vector<uint64_t>& rows,
                                          const std::vector<double>& fractions);

// The resolved mixture: each entry's files and how many of its rows to keep (nullopt: all).
struct MixturePart {
  std::vector<std::string> files;
  std::optional<std::vector<std::string>> columns;
  std::optional<uint64_t> take;
};
std::vector<MixturePart> resolve_mixture(const std::vector<MixtureEntry>& entries,
                                         bool skip_invalid_rows);

// Reads the parts' rows in order: each part's first `take` rows, reduced to its columns.
void read_mixture_rows(const std::vector<MixturePart>& parts, RowErrors& errors,
                       const RowVisitor& visit);

}  // namespace sft::data
