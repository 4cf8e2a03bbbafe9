// `sft prepare`: dataset preparation on its own — the same data/model flags as `sft train`
// (TRL's names), the rows tokenized, truncated or packed and stored in the token cache that
// `sft train` then opens. Prepare-only flags: --report, --preview N, --dump, --dump_packed,
// --cache_dir, --tokenizer_name_or_path.
//
// --dump writes the rows at TRL's comparison point: after tokenization, label building,
// truncation and the fully-masked filter, before packing (with --packing: not truncated, as
// TRL does not truncate before packing). --dump_packed writes the final packed rows.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <set>

#include "cli/command_line.h"
#include "cli/command_registry.h"
#include "core/error.h"
#include "core/log.h"
#include "data/prepare.h"
#include "data/preview.h"
#include "io/atomic_file.h"
#include "io/hf_hub.h"
#include "io/options.h"
#include "text/tokenizer.h"
#include "train/args.h"
#include "train/data_options.h"

namespace sft::cli {

namespace {

void append_ints(std::string& out, const char* key, std::span<const int32_t> values, bool first) {
  out += first ? "{\"" : ", \"";
  out += key;
  out += "\": [";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(values[i]);
  }
  out += "]";
}

// Streams one JSON object per row to an AtomicFile (complete file or none).
class JsonlDump {
 public:
  explicit JsonlDump(const std::string& path) : file_(path) {}
  void row(const data::TokenRow& row, std::span<const int32_t> position_ids = {},
           std::span<const int32_t> doc_lengths = {}, bool packed = false) {
    line_.clear();
    append_ints(line_, "input_ids", row.input_ids, true);
    append_ints(line_, "labels", row.labels, false);
    if (packed) {
      append_ints(line_, "position_ids", position_ids, false);
      append_ints(line_, "doc_lengths", doc_lengths, false);
    }
    line_ += "}\n";
    file_.write(line_);
  }
  void commit() { file_.commit(); }

 private:
  AtomicFile file_;
  std::string line_;
};

constexpr std::string_view kUsage =
    "usage: sft prepare --model_name_or_path M --dataset_name D [flags]\n\n"
    "The other flags of `sft train` are accepted and ignored, so one command line\n"
    "or YAML config serves both.\n";

std::string resolve_tokenizer(const std::string& name_or_path, const std::string& revision) {
  if (std::filesystem::is_regular_file(name_or_path)) return name_or_path;
  return resolve_hub_folder(name_or_path, HubRepoType::kModel, revision);
}

}  // namespace

int run_prepare(const Args& tokens) {
  TrainingArgs args;
  OptionSet options = training_options(args);
  std::string tokenizer_name_or_path, dump, dump_packed;
  std::string cache_dir = default_token_cache_dir();
  bool report = false, no_cache = false;
  int64_t preview = 0;
  const std::string group = "sft prepare";
  options.add_string("tokenizer_name_or_path", &tokenizer_name_or_path, group,
                     "tokenizer folder or Hub id; empty = --model_name_or_path");
  options.add_string("cache_dir", &cache_dir, group,
                     "token cache folder: $SFT_CACHE_DIR, else ~/.cache/sft/tokens");
  options.add_bool("no_cache", &no_cache, group,
                   "prepare in memory; neither read nor write the cache");
  options.add_bool("report", &report, group, "print the preparation report on stdout");
  options.add_int("preview", &preview, group,
                  "print N prepared rows with trained tokens marked (green, or [[...]])");
  options.add_string("dump", &dump, group,
                     "write rows after truncation, before packing, as JSONL {input_ids, labels}");
  options.add_string("dump_packed", &dump_packed, group,
                     "with --packing: write packed rows as JSONL {input_ids, labels, "
                     "position_ids, doc_lengths}");
  // --help lists only the flags preparation reads (train/data_options.cpp); the other `sft
  // train` flags are accepted so that one command line or YAML serves both commands.
  static const std::set<std::string> kPreparationFlags = {"model_name_or_path",
                                                          "model_revision",
                                                          "dataset_name",
                                                          "datasets",
                                                          "dataset_config",
                                                          "dataset_train_split",
                                                          "dataset_text_field",
                                                          "dataset_columns",
                                                          "dataset_num_proc",
                                                          "chat_template_path",
                                                          "eos_token",
                                                          "max_length",
                                                          "truncation_mode",
                                                          "packing",
                                                          "packing_strategy",
                                                          "completion_only_loss",
                                                          "assistant_only_loss",
                                                          "skip_invalid_rows",
                                                          "num_threads",
                                                          "disable_tqdm",
                                                          "tokenizer_name_or_path",
                                                          "cache_dir",
                                                          "no_cache",
                                                          "report",
                                                          "preview",
                                                          "dump",
                                                          "dump_packed"};
  if (!parse_command_line("prepare", kUsage, options, tokens, {}, &kPreparationFlags)) return 0;
  if (tokenizer_name_or_path.empty()) tokenizer_name_or_path = args.model_name_or_path;
  if (tokenizer_name_or_path.empty())
    fail_usage("args", "--model_name_or_path (or --tokenizer_name_or_path) is required");
  if (args.dataset_name.empty() && args.datasets.is_null())
    fail_usage("args", "--dataset_name (or a --datasets mixture) is required");
  if (!args.datasets.is_null()) data::parse_mixture(args.datasets);
  if (!dump_packed.empty() && !args.packing)
    fail_usage("args", "--dump_packed needs --packing (hint: use --dump for unpacked rows)");
  if (preview < 0) fail_usage("args", "--preview must be >= 0");

  const std::string tokenizer_path = resolve_tokenizer(tokenizer_name_or_path, args.model_revision);
  data::PrepareOptions prepare =
      prepare_options_from_args(args, tokenizer_path, no_cache ? "" : cache_dir);
  std::unique_ptr<JsonlDump> dump_file;
  if (!dump.empty()) {
    dump_file = std::make_unique<JsonlDump>(dump);
    prepare.on_row = [&](const data::TokenRow& row) { dump_file->row(row); };
  }
  const auto dataset = data::prepare_dataset(prepare);
  if (dump_file) dump_file->commit();
  if (!dump_packed.empty()) {
    JsonlDump packed(dump_packed);
    std::vector<int32_t> positions;
    for (size_t i = 0; i < dataset->num_rows(); ++i) {
      const auto docs = dataset->doc_lengths(i);
      positions.clear();
      for (int32_t d : docs)
        for (int32_t p = 0; p < d; ++p) positions.push_back(p);
      packed.row(dataset->row(i), positions, docs, true);
    }
    packed.commit();
  }
  if (report) std::cout << dataset->report().to_text();
  if (preview > 0) {
    const text::Tokenizer tokenizer = text::Tokenizer::from_file(tokenizer_path);
    const bool ansi = isatty(STDOUT_FILENO) == 1;
    const size_t n = std::min<size_t>(static_cast<size_t>(preview), dataset->num_rows());
    for (size_t i = 0; i < n; ++i) {
      const auto row = dataset->row(i);
      size_t trained = 0;
      for (int32_t l : row.labels) trained += l != data::kIgnoreLabel;
      std::cout << "--- row " << i << ": " << row.input_ids.size() << " tokens, " << trained
                << " trained, " << dataset->doc_lengths(i).size() << " document(s) ---\n"
                << data::render_trained_spans(tokenizer, row, ansi) << "\n";
    }
  }
  return 0;
}

SFT_REGISTER_COMMAND("prepare",
                     "tokenize, truncate or pack a dataset into the token cache (TRL's dataset "
                     "preparation), with a report",
                     run_prepare);

}  // namespace sft::cli
