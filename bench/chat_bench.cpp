// Chat template benchmarks: parse once, render a 10-turn conversation, compute assistant
// masks by prefix rendering. The Qwen3 template comes from ../shared/assets (skipped when
// absent); the ChatML fixture is committed.
// Run: build/bench/bench_chat
#include <benchmark/benchmark.h>

#include <filesystem>

#include "chat/assistant_mask.h"
#include "io/mapped_file.h"

namespace {

using sft::chat::ChatInputs;
using sft::chat::ChatTemplate;
using OJ = sft::jinja::OrderedJson;

const std::string kRoot = SFT_SOURCE_DIR;

std::string qwen3_dir() {
  return kRoot + "/../shared/assets/tokenizers/qwen3";
}

// System prompt + 10 turns (5 user/assistant exchanges), realistic lengths.
ChatInputs ten_turns() {
  ChatInputs in;
  in.messages = OJ::array();
  in.messages.push_back(
      {{"role", "system"}, {"content", "You are a helpful assistant. Answer briefly."}});
  for (int i = 0; i < 5; ++i) {
    in.messages.push_back({{"role", "user"},
                           {"content", "Question " + std::to_string(i) +
                                           ": what is the capital of the country we talked about, "
                                           "and how many people live there?"}});
    in.messages.push_back({{"role", "assistant"},
                           {"content", "Answer " + std::to_string(i) +
                                           ": the capital is Paris, with about 2.1 million "
                                           "inhabitants in the city proper."}});
  }
  return in;
}

void BM_ParseQwen3Template(benchmark::State& state) {
  if (!std::filesystem::exists(qwen3_dir())) return state.SkipWithError("../shared absent");
  std::string source = ChatTemplate::from_tokenizer(qwen3_dir()).jinja().source();
  for (auto _ : state) {
    sft::jinja::Template t(source);
    benchmark::DoNotOptimize(&t);
  }
}
BENCHMARK(BM_ParseQwen3Template);

void BM_RenderQwen3_10Turns(benchmark::State& state) {
  if (!std::filesystem::exists(qwen3_dir())) return state.SkipWithError("../shared absent");
  ChatTemplate tmpl = ChatTemplate::from_tokenizer(qwen3_dir());
  ChatInputs in = ten_turns();
  size_t bytes = 0;
  for (auto _ : state) {
    std::string text = tmpl.apply(in);
    bytes += text.size();
    benchmark::DoNotOptimize(text.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
}
BENCHMARK(BM_RenderQwen3_10Turns)->Unit(benchmark::kMicrosecond);

// The work prefix masks do on Qwen3 (2 renders per turn). The official Qwen3 template is
// not prefix-preserving across assistant turns, so the mask itself fails; this measures
// the renders it would need.
void BM_Qwen3PrefixRenders_10Turns(benchmark::State& state) {
  if (!std::filesystem::exists(qwen3_dir())) return state.SkipWithError("../shared absent");
  ChatTemplate tmpl = ChatTemplate::from_tokenizer(qwen3_dir());
  ChatInputs in = ten_turns();
  for (auto _ : state) {
    ChatTemplate::Prepared chat = tmpl.prepare(in);
    for (size_t i = 1; i <= in.messages.size(); ++i) {
      for (bool agp : {false, true}) {
        std::string text = tmpl.render_prefix(chat, i, agp);
        benchmark::DoNotOptimize(text.data());
      }
    }
  }
}
BENCHMARK(BM_Qwen3PrefixRenders_10Turns)->Unit(benchmark::kMicrosecond);

void BM_PrefixMaskChatML_10Turns(benchmark::State& state) {
  ChatTemplate tmpl =
      ChatTemplate::from_file(kRoot + "/tests/fixtures/chat_templates/chatml.jinja", {});
  ChatInputs in = ten_turns();
  for (auto _ : state) {
    sft::chat::AssistantMask m = sft::chat::mask_from_prefix_rendering(tmpl, in);
    benchmark::DoNotOptimize(m.spans.data());
  }
}
BENCHMARK(BM_PrefixMaskChatML_10Turns)->Unit(benchmark::kMicrosecond);

void BM_GenerationMaskChatML_10Turns(benchmark::State& state) {
  ChatTemplate tmpl =
      ChatTemplate::from_file(kRoot + "/tests/fixtures/chat_templates/chatml_generation.jinja", {});
  ChatInputs in = ten_turns();
  for (auto _ : state) {
    sft::chat::AssistantMask m = sft::chat::mask_from_generation_blocks(tmpl, in);
    benchmark::DoNotOptimize(m.spans.data());
  }
}
BENCHMARK(BM_GenerationMaskChatML_10Turns)->Unit(benchmark::kMicrosecond);

}  // namespace
