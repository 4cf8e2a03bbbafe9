// Finding the files of a dataset split from --dataset_name, --dataset_config and the split
// name, the way datasets.load_dataset does for local data:
//
//   a file (.jsonl/.json/.parquet)  the train split (a lone file has no other split)
//   a glob ("data/*.parquet")       the train split, matches in name order
//   a folder or a Hub dataset id    found in the HF cache (datasets--ORG--NAME/snapshots/<rev>)
//                                   and searched in the Hub's layouts
//
// Inside a folder: with a config, only files under <config>/ count (the Hub's parquet
// conversion also uses "default/" when no config is given). A file belongs to split S when
// S is one of the words of its path (split at - _ . space, digits and /), as in
// data/train-00000-of-00002.parquet, train.jsonl, test/0000.parquet. When no file names any
// usual split, all files are the train split. Results are sorted by path.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace sft::data {

struct DatasetSource {
  std::string name;    // --dataset_name
  std::string config;  // --dataset_config ("" = none)
  std::string revision = "main";
};

// The files of `split`, or nullopt when the dataset has no such split (e.g. no test split).
// Throws "[data] ..." / "[hub] ..." when the dataset itself cannot be found or read.
std::optional<std::vector<std::string>> find_split_files(const DatasetSource& source,
                                                         const std::string& split);

// As find_split_files, but a missing split is an error saying what was looked for.
std::vector<std::string> resolve_split_files(const DatasetSource& source, const std::string& split);

}  // namespace sft::data
