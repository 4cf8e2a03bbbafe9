// Tokenizer benchmarks: loading tokenizer.json, single-thread encode throughput and batch
// encode scaling over threads. Inputs come from the environment so that
// tools/bench_tokenizers.py can run HF `tokenizers` on exactly the same corpus:
//   SFT_BENCH_TOKENIZER  folder or tokenizer.json (default ../shared/assets/tokenizers/qwen3)
//   SFT_BENCH_CORPUS     JSONL of strings (default tests/fixtures/tokenizers/corpus.jsonl)
// Run: build/bench/bench_tokenizer --benchmark_repetitions=5
// --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "io/json.h"
#include "io/mapped_file.h"
#include "text/tokenizer.h"

namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

std::string tokenizer_path() {
  return env_or("SFT_BENCH_TOKENIZER",
                std::string(SFT_SOURCE_DIR) + "/../shared/assets/tokenizers/qwen3");
}

const std::vector<std::string>& corpus() {
  static const std::vector<std::string> texts = [] {
    std::vector<std::string> out;
    std::ifstream in(env_or("SFT_BENCH_CORPUS", std::string(SFT_SOURCE_DIR) +
                                                    "/tests/fixtures/tokenizers/corpus.jsonl"));
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) out.push_back(sft::Json::parse(line).get<std::string>());
    return out;
  }();
  return texts;
}

int64_t corpus_bytes() {
  int64_t n = 0;
  for (const auto& s : corpus()) n += static_cast<int64_t>(s.size());
  return n;
}

const sft::text::Tokenizer& tokenizer() {
  static const sft::text::Tokenizer tok = sft::text::Tokenizer::from_file(tokenizer_path());
  return tok;
}

void BM_Load(benchmark::State& state) {
  std::string path = tokenizer_path();
  for (auto _ : state) {
    auto tok = sft::text::Tokenizer::from_file(path);
    benchmark::DoNotOptimize(tok.vocab_size());
  }
}
BENCHMARK(BM_Load)->Unit(benchmark::kMillisecond)->UseRealTime();

// One thread, encode() in a loop over the corpus (the word cache warms on the first pass,
// as HF's does).
void BM_EncodeSingleThread(benchmark::State& state) {
  const auto& tok = tokenizer();
  const auto& texts = corpus();
  std::vector<int32_t> ids;
  int64_t tokens = 0;
  for (auto _ : state) {
    tokens = 0;
    for (const auto& t : texts) {
      tok.encode_into(t, false, ids);
      tokens += static_cast<int64_t>(ids.size());
    }
  }
  state.SetBytesProcessed(state.iterations() * corpus_bytes());
  state.counters["tokens"] = static_cast<double>(tokens);
}
BENCHMARK(BM_EncodeSingleThread)->Unit(benchmark::kMillisecond)->UseRealTime();

// encode_batch over a pool of N threads.
void BM_EncodeBatch(benchmark::State& state) {
  const auto& tok = tokenizer();
  const auto& texts = corpus();
  sft::ThreadPool pool(static_cast<size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(tok.encode_batch(texts, false, &pool));
  state.SetBytesProcessed(state.iterations() * corpus_bytes());
}
BENCHMARK(BM_EncodeBatch)->Arg(1)->Arg(2)->Arg(4)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
