// Encoding, truncation, filtering and packing of a split's rows (see prepare_rows.h).
#include "data/prepare_rows.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <exception>
#include <optional>

#include "core/error.h"
#include "core/progress.h"
#include "core/thread_pool.h"
#include "data/parquet_reader.h"
#include "data/row_reader.h"
#include "data/token_cache.h"
#include "io/mapped_file.h"

namespace sft::data {

namespace {

constexpr const char* kNoTrainedTokens = "no_trained_tokens";
constexpr const char* kEncodeError = "encode_error";

// Rows expected in the files, for the progress bar's percentage and ETA (an estimate: blank
// JSONL lines count; .json arrays are not counted, so the bar shows no ETA for them).
uint64_t estimate_rows(const std::vector<std::string>& paths) {
  uint64_t rows = 0;
  for (const auto& path : paths) {
    switch (file_format_of(path)) {
      case FileFormat::kJsonl: {
        auto file = MappedFile::open(path);
        auto bytes = file->bytes();
        const char* p = reinterpret_cast<const char*>(bytes.data());
        const char* end = p + bytes.size();
        while (p < end) {
          const void* nl = std::memchr(p, '\n', end - p);
          ++rows;
          if (!nl) break;
          p = static_cast<const char*>(nl) + 1;
        }
        break;
      }
      case FileFormat::kParquet:
        rows += ParquetFile::open(path).num_rows();
        break;
      case FileFormat::kJson:
        return 0;
    }
  }
  return rows;
}

struct Slot {
  Example example;
  FileLocation where;
  EncodedRow encoded;
  std::string error;            // non-empty: encoding failed
  uint64_t encoded_length = 0;  // before truncation
  bool truncated = false;
};

bool any_trained(std::span<const int32_t> labels) {
  return std::any_of(labels.begin(), labels.end(), [](int32_t l) { return l != kIgnoreLabel; });
}

uint64_t count_trained(std::span<const int32_t> labels) {
  return std::count_if(labels.begin(), labels.end(), [](int32_t l) { return l != kIgnoreLabel; });
}

// fn(i) for i in [0, n) on every thread of the pool, handing out indices one by one: rows
// differ a lot in cost (a 20-turn conversation vs a one-liner), so static chunks would idle.
void for_each_dynamic(ThreadPool& pool, size_t n, const std::function<void(size_t)>& fn) {
  std::atomic<size_t> next{0};
  pool.parallel_for(pool.size(), [&](size_t, size_t, size_t) {
    for (size_t i; (i = next.fetch_add(1)) < n;) fn(i);
  });
}

// ---- the steps of prepare_rows, in the order it runs them ----

// How rows are cut: only without packing, and only with max_length (TRL's rule).
struct Truncation {
  bool enabled = false;
  size_t max_length = 0;
  bool keep_start = true;  // else keep_end
};

// What every step reads and none changes.
struct Stage {
  const PrepareOptions& options;
  const RowPipeline& pipeline;
  Truncation truncation;
  ThreadPool& pool;
  const FinalRowSink& out;
};

// Step 1: the options that prepare_rows alone checks, and the truncation they ask for.
Truncation checked_truncation(const PrepareOptions& options) {
  if (options.truncation_mode != "keep_start" && options.truncation_mode != "keep_end")
    fail("data", "unsupported truncation_mode '" + options.truncation_mode +
                     "' (hint: use keep_start or keep_end)");
  if (options.packing && !options.max_length)
    fail("data", "packing needs max_length (hint: pass --max_length N)");
  if (options.max_length && *options.max_length <= 0)
    fail("data", "max_length must be positive, got " + std::to_string(*options.max_length));
  Truncation t;
  t.enabled = !options.packing && options.max_length.has_value();
  t.max_length = static_cast<size_t>(options.max_length.value_or(0));
  t.keep_start = options.truncation_mode == "keep_start";
  return t;
}

// Step 2 (per row, on any thread): encodes the slot's example and truncates the result; an
// encoder error is kept in slot.error, without the encoder's "[component] " prefix (the
// row's file and place are prepended when it is reported).
void encode_slot(Slot& slot, const EncodeFn& encode, const Truncation& truncation) {
  try {
    slot.encoded = encode(slot.example);
  } catch (const Error& e) {
    slot.error = e.what();
    const std::string prefix = "[" + e.component() + "] ";
    if (slot.error.starts_with(prefix)) slot.error.erase(0, prefix.size());
    return;
  }
  slot.example = Example{};  // free the text early; only the tokens are needed now
  auto& ids = slot.encoded.input_ids;
  auto& labels = slot.encoded.labels;
  slot.encoded_length = ids.size();
  if (labels.size() != ids.size()) {
    slot.error = "[data] encoder returned labels of another length than input_ids";
    return;
  }
  const size_t max_length = truncation.max_length;
  if (truncation.enabled && ids.size() > max_length) {
    slot.truncated = true;
    if (truncation.keep_start) {
      ids.resize(max_length);
      labels.resize(max_length);
    } else {
      ids.erase(ids.begin(), ids.end() - max_length);
      labels.erase(labels.begin(), labels.end() - max_length);
    }
  }
}

// Step 3 (in row order): counts an encoded row into the report and says whether it is kept.
// A failed row is an error naming its file and place, or counted as dropped when skipping.
std::optional<TokenRow> settle_row(const Slot& slot, const Stage& stage, PrepareReport& report) {
  ++report.rows_read;
  if (!slot.error.empty()) {
    if (!stage.options.skip_invalid_rows)
      fail_in_file("data", slot.where, slot.error,
                   "fix the row, or pass --skip_invalid_rows to skip and count such rows");
    ++report.rows_dropped[kEncodeError];
    return std::nullopt;
  }
  const EncodedRow& e = slot.encoded;
  report.prompt_not_prefix += e.prompt_not_prefix;
  report.double_bos += e.double_bos;
  report.double_bos_fixed += e.double_bos_fixed;
  report.rows_truncated += slot.truncated;
  report.tokens_truncated += slot.encoded_length - e.input_ids.size();
  report.tokens += slot.encoded_length;
  const TokenRow row{e.input_ids, e.labels};
  if (stage.truncation.enabled && !any_trained(row.labels)) {
    ++report.rows_dropped[kNoTrainedTokens];
    return std::nullopt;
  }
  return row;
}

// Whether one of the end tokens is trained in these tokens (and their labels).
bool trains_end_token(std::span<const int32_t> ids, std::span<const int32_t> labels,
                      std::span<const int32_t> end_token_ids) {
  for (size_t t = 0; t < ids.size(); ++t)
    if (labels[t] != kIgnoreLabel &&
        std::find(end_token_ids.begin(), end_token_ids.end(), ids[t]) != end_token_ids.end())
      return true;
  return false;
}

// Step 4: what a kept row adds to the report: its count, length bucket and (unpacked, where
// the row is final) whether one of the end tokens is trained in it. Packed rows are counted
// after packing, which may still cut them or mask a document's first label.
void record_kept_row(const TokenRow& row, const Stage& stage, PrepareReport& report) {
  ++report.rows_kept;
  const size_t bucket = length_bucket(row.input_ids.size());
  if (report.length_histogram.size() <= bucket) report.length_histogram.resize(bucket + 1);
  ++report.length_histogram[bucket];
  if (!stage.options.packing &&
      trains_end_token(row.input_ids, row.labels, stage.pipeline.end_token_ids))
    ++report.rows_training_eos;
}

// Step 5: a kept row, unpacked, is a final row of one document.
void emit_unpacked_row(const TokenRow& row, const FinalRowSink& out, PrepareReport& report) {
  report.trained_tokens += count_trained(row.labels);
  report.output_tokens += row.input_ids.size();
  const int32_t one_document = static_cast<int32_t>(row.input_ids.size());
  out(row, {&one_document, 1});
}

// Steps 2 to 5 for one batch of examples, which it empties: encoded in parallel, then
// settled, recorded and passed on (to the sink, or kept for packing) in row order.
void run_batch(std::vector<Slot>& batch, const Stage& stage, PrepareReport& report,
               RowStore& before_packing, Progress& progress) {
  for_each_dynamic(stage.pool, batch.size(), [&batch, &stage](size_t i) {
    encode_slot(batch[i], stage.pipeline.encode, stage.truncation);
  });
  const uint64_t tokens_before = report.tokens;
  for (const Slot& slot : batch) {
    const std::optional<TokenRow> row = settle_row(slot, stage, report);
    if (!row) continue;
    record_kept_row(*row, stage, report);
    if (stage.options.on_row) stage.options.on_row(*row);
    if (stage.options.packing) {
      before_packing.append(*row);
    } else {
      emit_unpacked_row(*row, stage.out, report);
    }
  }
  progress.add(batch.size(), report.tokens - tokens_before);
  batch.clear();
}

// Step 6: rows the readers and format conversion skipped count as read and dropped.
void count_invalid_rows(const RowErrors& errors, PrepareReport& report) {
  for (size_t p = 0; p < static_cast<size_t>(RowProblem::kCount); ++p) {
    const auto problem = static_cast<RowProblem>(p);
    if (errors.count(problem) == 0) continue;
    report.rows_dropped[row_problem_name(problem)] += errors.count(problem);
    report.rows_read += errors.count(problem);
  }
}

// Step 7 (packing only): plans the packed rows over every kept row, builds them in parallel
// batches and hands them to the sink in order; fills the report's packing counts, and the
// truncation and EOS counts from what the packed rows hold of each source row (bfd cuts rows
// longer than max_length, as TRL's pack_dataset does).
void pack_rows(const RowStore& rows, const Stage& stage, PrepareReport& report) {
  PackOptions pack = stage.options.pack;
  pack.max_length = static_cast<uint32_t>(stage.truncation.max_length);
  std::vector<uint32_t> lengths(rows.num_rows());
  std::vector<TokenRow> sources(rows.num_rows());
  for (size_t i = 0; i < lengths.size(); ++i) {
    sources[i] = rows.row(i);
    lengths[i] = static_cast<uint32_t>(sources[i].input_ids.size());
  }
  const PackPlan plan = plan_packing(lengths, pack);
  const size_t batch_rows = stage.pipeline.batch_rows;
  uint64_t packed_tokens = 0;
  std::vector<PackedRow> packed;
  std::vector<uint32_t> kept(lengths.size(), 0);       // tokens of each row in the packed rows
  std::vector<uint8_t> trains_eos(lengths.size(), 0);  // an end token of the row is trained
  for (size_t begin = 0; begin < plan.rows.size(); begin += batch_rows) {
    const size_t n = std::min(batch_rows, plan.rows.size() - begin);
    packed.assign(n, PackedRow{});
    for_each_dynamic(stage.pool, n, [&packed, &plan, &sources, begin](size_t i) {
      packed[i] = materialize_packed_row(plan, begin + i, sources);
    });
    for (size_t i = 0; i < n; ++i) {
      const PackedRow& p = packed[i];
      size_t at = 0;
      for (const PackSegment& s : plan.rows[begin + i]) {
        kept[s.row] += s.length;
        const std::span<const int32_t> ids(p.input_ids), labels(p.labels);
        if (trains_end_token(ids.subspan(at, s.length), labels.subspan(at, s.length),
                             stage.pipeline.end_token_ids))
          trains_eos[s.row] = 1;
        at += s.length;
      }
      packed_tokens += p.input_ids.size();
      report.trained_tokens += count_trained(p.labels);
      stage.out({p.input_ids, p.labels}, p.doc_lengths);
    }
  }
  for (size_t r = 0; r < lengths.size(); ++r) {
    report.rows_truncated += kept[r] < lengths[r];
    report.tokens_truncated += lengths[r] - kept[r];
    report.rows_training_eos += trains_eos[r];
  }
  report.packed_rows = plan.rows.size();
  report.output_tokens = packed_tokens;
  if (report.packed_rows > 0)
    report.packing_fill =
        double(packed_tokens) / (double(report.packed_rows) * double(stage.truncation.max_length));
}

}  // namespace

size_t length_bucket(uint64_t length) {
  return length <= 1 ? 0 : static_cast<size_t>(std::bit_width(length) - 1);
}

PrepareReport prepare_rows(const std::vector<std::string>& paths, const PrepareOptions& options,
                           const RowPipeline& pipeline, const FinalRowSink& out) {
  return prepare_rows([&paths](RowErrors& e, const RowVisitor& v) { read_rows(paths, e, v); },
                      estimate_rows(paths), options, pipeline, out);
}

PrepareReport prepare_rows(const RowSource& rows, uint64_t estimated_rows,
                           const PrepareOptions& options, const RowPipeline& pipeline,
                           const FinalRowSink& out) {
  const Stage stage{options, pipeline, checked_truncation(options),
                    pipeline.pool ? *pipeline.pool : default_thread_pool(), out};
  PrepareReport report;
  RowErrors errors(options.skip_invalid_rows);
  RowStore before_packing;  // packing needs every row's length before it can start
  Progress progress("preparing", estimated_rows, options.show_progress);

  std::vector<Slot> batch;
  batch.reserve(pipeline.batch_rows);
  const DetectedFormat format =
      read_examples(rows, options.format, errors, [&](Example&& example, const RowRef& where) {
        batch.push_back(Slot{std::move(example), where.location(), {}, {}, 0, false});
        if (batch.size() >= pipeline.batch_rows)
          run_batch(batch, stage, report, before_packing, progress);
      });
  if (!batch.empty()) run_batch(batch, stage, report, before_packing, progress);
  progress.finish();
  report.format = format_name(format);
  count_invalid_rows(errors, report);
  if (options.packing) pack_rows(before_packing, stage, report);
  return report;
}

}  // namespace sft::data
