// PrepareReport: the audit of a preparation as text (sft prepare --report, sft train's log)
// and as JSON (stored in the token cache manifest, so a cached run reports the same numbers).
#include <cstdio>
#include <sstream>

#include "core/progress.h"
#include "data/prepare.h"

namespace sft::data {

namespace {

std::string percent(uint64_t part, uint64_t whole) {
  if (whole == 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * double(part) / double(whole));
  return buf;
}

}  // namespace

std::string PrepareReport::to_text() const {
  std::ostringstream out;
  uint64_t dropped = 0;
  for (const auto& [reason, n] : rows_dropped) dropped += n;
  out << "dataset format:      " << format << "\n";
  out << "rows:                " << rows_read << " read, " << rows_kept << " kept, " << dropped
      << " dropped";
  if (dropped) {
    out << " (";
    bool first = true;
    for (const auto& [reason, n] : rows_dropped) {
      out << (first ? "" : ", ") << n << " " << reason;
      first = false;
    }
    out << ")";
  }
  out << "\n";
  out << "truncated rows:      " << rows_truncated << " (" << percent(rows_truncated, rows_read)
      << " of rows read), " << tokens_truncated << " tokens cut ("
      << percent(tokens_truncated, tokens) << " of encoded tokens)\n";
  out << "tokens:              " << tokens << " encoded, " << output_tokens
      << " in training rows\n";
  out << "trained tokens:      " << trained_tokens << " (" << percent(trained_tokens, output_tokens)
      << " of training tokens)\n";
  out << "rows training EOS:   " << rows_training_eos << " ("
      << percent(rows_training_eos, rows_kept)
      << " of kept rows train their EOS / end-of-turn token)\n";
  out << "prompt not a prefix: " << prompt_not_prefix << "\n";
  out << "double BOS:          " << double_bos << " rows (" << double_bos_fixed << " fixed)\n";
  if (packed_rows) {
    char fill[32];
    std::snprintf(fill, sizeof fill, "%.1f%%", 100.0 * packing_fill);
    out << "packing:             " << rows_kept << " rows into " << packed_rows << " rows, fill "
        << fill << "\n";
  }
  if (!length_histogram.empty()) {
    out << "row lengths (tokens, kept rows before packing):\n";
    uint64_t most = 0;
    for (uint64_t n : length_histogram) most = std::max(most, n);
    size_t first = 0;  // leading empty buckets say nothing
    while (length_histogram[first] == 0) ++first;
    for (size_t k = first; k < length_histogram.size(); ++k) {
      const uint64_t lo = k == 0 ? 0 : uint64_t(1) << k, hi = (uint64_t(1) << (k + 1)) - 1;
      char line[96];
      std::snprintf(line, sizeof line, "  %7llu-%-7llu %9llu ", (unsigned long long)lo,
                    (unsigned long long)hi, (unsigned long long)length_histogram[k]);
      const size_t bar = most ? size_t(40.0 * double(length_histogram[k]) / double(most) + 0.5) : 0;
      out << line << std::string(bar, '#') << "\n";
    }
  }
  out << "from cache:          " << (from_cache ? "yes" : "no") << " (" << format_duration(seconds)
      << ", " << seconds << " s)\n";
  return out.str();
}

Json PrepareReport::to_json() const {
  return Json{{"format", format},
              {"rows_read", rows_read},
              {"rows_kept", rows_kept},
              {"rows_dropped", rows_dropped},
              {"rows_truncated", rows_truncated},
              {"tokens_truncated", tokens_truncated},
              {"prompt_not_prefix", prompt_not_prefix},
              {"double_bos", double_bos},
              {"double_bos_fixed", double_bos_fixed},
              {"tokens", tokens},
              {"output_tokens", output_tokens},
              {"trained_tokens", trained_tokens},
              {"rows_training_eos", rows_training_eos},
              {"length_histogram", length_histogram},
              {"packed_rows", packed_rows},
              {"packing_fill", packing_fill},
              {"from_cache", from_cache},
              {"seconds", seconds}};
}

PrepareReport PrepareReport::from_json(const Json& j) {
  PrepareReport r;
  r.format = j.at("format").get<std::string>();
  r.rows_read = j.at("rows_read").get<uint64_t>();
  r.rows_kept = j.at("rows_kept").get<uint64_t>();
  r.rows_dropped = j.at("rows_dropped").get<std::map<std::string, uint64_t>>();
  r.rows_truncated = j.at("rows_truncated").get<uint64_t>();
  r.tokens_truncated = j.at("tokens_truncated").get<uint64_t>();
  r.prompt_not_prefix = j.at("prompt_not_prefix").get<uint64_t>();
  r.double_bos = j.at("double_bos").get<uint64_t>();
  r.double_bos_fixed = j.at("double_bos_fixed").get<uint64_t>();
  r.tokens = j.at("tokens").get<uint64_t>();
  r.output_tokens = j.at("output_tokens").get<uint64_t>();
  r.trained_tokens = j.at("trained_tokens").get<uint64_t>();
  r.rows_training_eos = j.at("rows_training_eos").get<uint64_t>();
  r.length_histogram = j.at("length_histogram").get<std::vector<uint64_t>>();
  r.packed_rows = j.at("packed_rows").get<uint64_t>();
  r.packing_fill = j.at("packing_fill").get<double>();
  r.from_cache = j.at("from_cache").get<bool>();
  r.seconds = j.at("seconds").get<double>();
  return r;
}

}  // namespace sft::data
