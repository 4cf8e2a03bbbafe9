// prepare_dataset: fingerprint → token cache hit, or tokenizer + template + Encoder →
// prepare_rows → cache (see prepare.h).
#include "data/prepare.h"

#include <chrono>
#include <filesystem>

#include "chat/chat_template.h"
#include "core/error.h"
#include "core/log.h"
#include "core/thread_pool.h"
#include "data/prepare_rows.h"
#include "data/token_cache.h"
#include "io/json.h"
#include "text/tokenizer.h"
#include "text/tokenizer_config.h"

namespace sft::data {

namespace {

namespace fs = std::filesystem;

// Bumped whenever preparation changes its output (rows or stored audit) for the same inputs,
// so old caches miss (2: the audit counts truncation and EOS after packing).
constexpr const char* kPrepareVersion = "sft-prepare-2";

// End-of-turn tokens of common chat templates, counted with the EOS in rows_training_eos
// (Qwen's base tokenizer's EOS is <|endoftext|> but turns end with <|im_end|>).
constexpr const char* kEndOfTurnTokens[] = {"<|im_end|>", "<|eot_id|>", "<end_of_turn>", "<|end|>",
                                            "<|eot|>"};

// The folder of a tokenizer given as a folder or as its tokenizer.json.
fs::path tokenizer_folder(const std::string& path) {
  return fs::is_directory(path) ? fs::path(path) : fs::path(path).parent_path();
}

fs::path tokenizer_json(const std::string& path) {
  return fs::is_directory(path) ? fs::path(path) / "tokenizer.json" : fs::path(path);
}

class MemoryDataset final : public PreparedDataset {
 public:
  MemoryDataset(RowStore rows, PrepareReport report, std::string fingerprint)
      : rows_(std::move(rows)), report_(std::move(report)), fingerprint_(std::move(fingerprint)) {}
  size_t num_rows() const override { return rows_.num_rows(); }
  TokenRow row(size_t i) const override { return rows_.row(i); }
  std::span<const int32_t> doc_lengths(size_t i) const override { return rows_.docs(i); }
  const PrepareReport& report() const override { return report_; }
  const std::string& fingerprint() const override { return fingerprint_; }

 private:
  RowStore rows_;
  PrepareReport report_;
  std::string fingerprint_;
};

class CachedDataset final : public PreparedDataset {
 public:
  CachedDataset(std::unique_ptr<TokenCache> cache, PrepareReport report, std::string fingerprint)
      : cache_(std::move(cache)),
        report_(std::move(report)),
        fingerprint_(std::move(fingerprint)) {}
  size_t num_rows() const override { return cache_->num_rows(); }
  TokenRow row(size_t i) const override { return cache_->row(i); }
  std::span<const int32_t> doc_lengths(size_t i) const override { return cache_->doc_lengths(i); }
  const PrepareReport& report() const override { return report_; }
  const std::string& fingerprint() const override { return fingerprint_; }

 private:
  std::unique_ptr<TokenCache> cache_;
  PrepareReport report_;
  std::string fingerprint_;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::unique_ptr<chat::ChatTemplate> load_template(const PrepareOptions& options) {
  const fs::path folder = tokenizer_folder(options.tokenizer_path);
  const fs::path config_path = folder / "tokenizer_config.json";
  if (options.chat_template_path) {
    chat::SpecialTokens tokens;
    if (fs::exists(config_path))
      tokens = chat::special_tokens_from_config(read_json_file(config_path.string(), "data"));
    return std::make_unique<chat::ChatTemplate>(
        chat::ChatTemplate::from_file(*options.chat_template_path, tokens));
  }
  bool has_template = fs::exists(folder / "chat_template.jinja");
  if (!has_template && fs::exists(config_path))
    has_template = !text::TokenizerConfig::from_file(config_path.string()).chat_templates.empty();
  // No template is fine for text / tokenized datasets; the Encoder explains what to pass
  // when a conversational row needs one.
  if (!has_template) return nullptr;
  return std::make_unique<chat::ChatTemplate>(chat::ChatTemplate::from_tokenizer(folder.string()));
}

// prepare_rows over the split's files, or over the mixture's parts when there are any.
PrepareReport run_rows(const std::vector<std::string>& files, const std::vector<MixturePart>& parts,
                       const PrepareOptions& options, const RowPipeline& pipeline,
                       const FinalRowSink& out) {
  if (parts.empty()) return prepare_rows(files, options, pipeline, out);
  return prepare_rows(
      [&parts](RowErrors& errors, const RowVisitor& visit) {
        read_mixture_rows(parts, errors, visit);
      },
      0, options, pipeline, out);
}

// A dataset without a single row fails here, naming its file and split, rather than being
// summarised as "language modeling, 0 rows" (the format a row-less file defaults to) and
// refused later by the trainer with no file named.
void require_rows(uint64_t rows_read, const PrepareOptions& options,
                  const std::vector<std::string>& files) {
  if (rows_read > 0) return;
  if (!options.mixture.empty())
    fail("data", "the --datasets mixture has no rows (" + std::to_string(files.size()) +
                     " file(s) read) (hint: check each entry's path, split and data_files)");
  const std::string what =
      files.size() == 1 ? files.front()
                        : options.source.name + " (" + std::to_string(files.size()) + " files)";
  fail_in_file("data", {what, ""}, "the dataset's '" + options.split + "' split has no rows",
               "the file is empty or holds no records: a .jsonl file needs one JSON object per "
               "line, a .json file a list of objects, a .parquet file at least one row group");
}

}  // namespace

std::string prepare_fingerprint(const PrepareOptions& o, const std::vector<std::string>& files) {
  Fingerprint fp;
  fp.add("version", kPrepareVersion);
  fp.add_int("cache_format", kTokenCacheVersion);
  fp.add_int("files", static_cast<int64_t>(files.size()));
  for (const auto& f : files) fp.add_file_identity(f);
  fp.add("split", o.split);
  // A mixture's entries (columns, rows kept; their files are in `files` above), so a
  // different mixture of the same files is another cache.
  if (!o.mixture.empty()) {
    for (const MixtureEntry& e : o.mixture) {
      Json j{{"path", e.path}, {"name", e.name}, {"data_dir", e.data_dir}, {"split", e.split}};
      j["columns"] = e.columns ? Json(*e.columns) : Json();
      j["fraction"] = e.fraction ? Json(*e.fraction) : Json();
      j["data_files"] = Json(e.data_files);
      fp.add("mixture_entry", j.dump());
    }
  }
  fp.add("text_field", o.format.text_field);
  for (const auto& [target, source] : o.format.columns) fp.add("column", target + "=" + source);
  fp.add_int("skip_invalid_rows", o.skip_invalid_rows);
  const fs::path folder = tokenizer_folder(o.tokenizer_path);
  fp.add_file_contents("tokenizer.json", tokenizer_json(o.tokenizer_path).string());
  fp.add_file_contents("tokenizer_config.json", (folder / "tokenizer_config.json").string());
  fp.add_file_contents("chat_template.jinja", (folder / "chat_template.jinja").string());
  fp.add("chat_template_path", o.chat_template_path.value_or("<none>"));
  if (o.chat_template_path) fp.add_file_contents("chat_template", *o.chat_template_path);
  fp.add("completion_only_loss", !o.encode.completion_only_loss   ? "none"
                                 : *o.encode.completion_only_loss ? "true"
                                                                  : "false");
  fp.add_int("assistant_only_loss", o.encode.assistant_only_loss);
  fp.add_int("fix_double_bos", o.encode.fix_double_bos);
  fp.add("tokenizer_eos_token",
         o.encode.tokenizer_eos_token ? "=" + *o.encode.tokenizer_eos_token : "<none>");
  fp.add("eos_token", o.encode.eos_token ? "=" + *o.encode.eos_token : "<none>");
  fp.add_int("max_length", o.max_length.value_or(-1));
  fp.add("truncation_mode", o.truncation_mode);
  fp.add_int("packing", o.packing);
  if (o.packing) {
    fp.add("packing_strategy", packing_strategy_name(o.pack.strategy));
    fp.add_int("map_batch_size", o.pack.map_batch_size);
    fp.add_int("map_num_proc", o.pack.map_num_proc);
  }
  return fp.hex();
}

std::unique_ptr<PreparedDataset> prepare_dataset(const PrepareOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<MixturePart> parts;
  std::vector<std::string> files;
  if (options.mixture.empty()) {
    files = resolve_split_files(options.source, options.split);
  } else {
    parts = resolve_mixture(options.mixture, options.skip_invalid_rows);
    for (const MixturePart& p : parts) files.insert(files.end(), p.files.begin(), p.files.end());
  }
  const std::string fingerprint = prepare_fingerprint(options, files);
  const std::string cache_dir =
      options.cache_dir.empty() ? "" : (fs::path(options.cache_dir) / fingerprint).string();

  if (!cache_dir.empty() && !options.on_row) {
    if (auto cache = TokenCache::open_if_complete(cache_dir)) {
      PrepareReport report = PrepareReport::from_json(cache->metadata().at("report"));
      require_rows(report.rows_read, options, files);  // a cache an older sft left
      const double prepared_in = report.seconds;
      report.from_cache = true;
      report.seconds = seconds_since(start);
      log_info("[data] using the token cache ", cache_dir, ": ", cache->num_rows(), " rows, ",
               cache->num_tokens(), " tokens (opened in ", report.seconds, " s; preparing took ",
               prepared_in, " s)");
      return std::make_unique<CachedDataset>(std::move(cache), std::move(report), fingerprint);
    }
  }

  const text::Tokenizer tokenizer = text::Tokenizer::from_file(options.tokenizer_path);
  const std::unique_ptr<chat::ChatTemplate> chat_template = load_template(options);
  EncodeOptions encode = options.encode;
  const fs::path config_path = tokenizer_folder(options.tokenizer_path) / "tokenizer_config.json";
  if (!encode.tokenizer_eos_token && fs::exists(config_path))
    encode.tokenizer_eos_token = text::TokenizerConfig::from_file(config_path.string()).eos_token;
  const Encoder encoder(tokenizer, chat_template.get(), encode);
  RowPipeline pipeline;
  pipeline.encode = [&](const Example& e) { return encoder.encode(e); };
  if (encoder.eos_token_id() >= 0) pipeline.end_token_ids.push_back(encoder.eos_token_id());
  for (const char* token : kEndOfTurnTokens) {
    auto id = tokenizer.token_to_id(token);
    if (id && *id != encoder.eos_token_id()) pipeline.end_token_ids.push_back(*id);
  }
  std::unique_ptr<ThreadPool> own_pool;
  if (options.num_threads) own_pool = std::make_unique<ThreadPool>(options.num_threads);
  pipeline.pool = own_pool.get();

  if (cache_dir.empty()) {
    RowStore rows;
    PrepareReport report = run_rows(
        files, parts, options, pipeline,
        [&](const TokenRow& row, std::span<const int32_t> docs) { rows.append(row, docs); });
    require_rows(report.rows_read, options, files);
    report.seconds = seconds_since(start);
    return std::make_unique<MemoryDataset>(std::move(rows), std::move(report), fingerprint);
  }

  TokenCacheWriter writer(cache_dir);
  PrepareReport report = run_rows(
      files, parts, options, pipeline,
      [&](const TokenRow& row, std::span<const int32_t> docs) { writer.append(row, docs); });
  require_rows(report.rows_read, options, files);  // before the cache is finished: none is left
  report.seconds = seconds_since(start);
  writer.finish(Json{{"report", report.to_json()}, {"fingerprint", fingerprint}});
  // Just written and checksummed on the way out: skip re-verifying the payload.
  auto cache = TokenCache::open_if_complete(cache_dir, /*verify_payload=*/false);
  if (!cache) fail("cache", "the token cache " + cache_dir + " vanished right after writing it");
  log_info("[data] prepared ", cache->num_rows(), " rows in ", report.seconds,
           " s; token cache: ", cache_dir);
  return std::make_unique<CachedDataset>(std::move(cache), std::move(report), fingerprint);
}

}  // namespace sft::data
