// `sft debug forward --model PATH --tokens FILE.json --out FILE.safetensors [--backward]
// [--activations]`: runs one packed batch through the model and dumps what a parity check
// compares with a transformers run: logits (f32 [T, V]), loss (f32 scalar, the mean over the
// shifted labelled targets as transformers computes it), with --backward grad.<HF name> for
// every parameter, with --activations act.<name> for every named intermediate.
//
// FILE.json: {"input_ids": [...], "labels": [...] (optional, -100 = ignored; default: the
// input_ids), "doc_lengths": [...] (optional, default one document)}.
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "cli/command_registry.h"
#include "core/error.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "model/transformer.h"

namespace sft::cli {

namespace {

constexpr const char* kUsage =
    "usage: sft debug forward --model PATH --tokens FILE.json --out FILE.safetensors\n"
    "                         [--backward] [--activations]\n\n"
    "FILE.json: {\"input_ids\": [...], \"labels\": [...], \"doc_lengths\": [...]}; labels\n"
    "(-100 = ignored) default to input_ids, doc_lengths to one document.\n"
    "Writes logits (f32 [T, V]) and loss (f32, mean over shifted labelled targets);\n"
    "  --backward     also grad.<parameter name> for every parameter (of that mean loss)\n"
    "  --activations  also act.<name> for every named intermediate (layers.N.attn_norm, ...)\n";

std::vector<int64_t> id_list(const Json& j, const char* key, const std::string& file,
                             bool required) {
  std::vector<int64_t> out;
  if (!j.contains(key)) {
    if (required)
      fail_in_file("debug", {file, ""}, std::string("no \"") + key + "\" array",
                   "give {\"input_ids\": [1, 2, 3]}");
    return out;
  }
  const Json& a = j.at(key);
  if (!a.is_array())
    fail_in_file("debug", {file, std::string("\"") + key + "\""},
                 "expected an array, got " + json_type_name(a), "use a list of integers");
  for (size_t i = 0; i < a.size(); ++i) {
    if (!a[i].is_number_integer())
      fail_in_file("debug", {file, std::string(key) + "[" + std::to_string(i) + "]"},
                   "expected an integer, got " + json_type_name(a[i]), "use token ids");
    out.push_back(a[i].get<int64_t>());
  }
  return out;
}

int run_debug_forward(const Args& args) {
  std::string model_path, tokens_path, out_path;
  bool backward = false, activations = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) fail("cli", "sft debug forward: " + a + " needs a value");
      return args[++i];
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--model") {
      model_path = value();
    } else if (a == "--tokens") {
      tokens_path = value();
    } else if (a == "--out") {
      out_path = value();
    } else if (a == "--backward") {
      backward = true;
    } else if (a == "--activations") {
      activations = true;
    } else {
      fail("cli", "sft debug forward: unknown argument '" + a + "' (see --help)");
    }
  }
  if (model_path.empty() || tokens_path.empty() || out_path.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const Json j = read_json_file(tokens_path, "debug");
  if (!j.is_object())
    fail_in_file("debug", {tokens_path, ""}, "expected a JSON object",
                 "give {\"input_ids\": [...]}");
  model::Batch batch{id_list(j, "input_ids", tokens_path, true),
                     id_list(j, "labels", tokens_path, false),
                     id_list(j, "doc_lengths", tokens_path, false)};
  if (batch.labels.empty()) batch.labels = batch.tokens;

  model::Transformer m = model::Transformer::load(model_path);
  const int64_t T = static_cast<int64_t>(batch.tokens.size()), V = m.config().vocab_size;
  Tensor logits = Tensor::zeros(DType::kF32, {T, V});
  const model::LossStats s = m.forward(batch, logits.mutable_values<float>().data());
  Tensor loss = Tensor::zeros(DType::kF32, {});
  loss.mutable_values<float>()[0] =
      s.count ? static_cast<float>(s.loss_sum / static_cast<double>(s.count))
              : std::numeric_limits<float>::quiet_NaN();
  std::vector<NamedTensor> out = {{"logits", logits}, {"loss", loss}};
  if (activations)
    for (const NamedTensor& a : m.activations()) out.push_back({"act." + a.name, a.tensor.clone()});
  if (backward && s.count > 0) {
    m.zero_grad();
    m.backward(1.0f / static_cast<float>(s.count));
    for (const NamedTensor& g : m.gradients()) out.push_back({"grad." + g.name, g.tensor});
  }
  write_safetensors(out_path, out);
  std::printf("tokens %lld, documents %zu, targets %lld, loss %.6f -> %s\n",
              static_cast<long long>(T),
              batch.doc_lengths.empty() ? size_t{1} : batch.doc_lengths.size(),
              static_cast<long long>(s.count), double(loss.values<float>()[0]), out_path.c_str());
  return 0;
}

int run_debug(const Args& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::fputs(kUsage, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "forward") return run_debug_forward(Args(args.begin() + 1, args.end()));
  fail("cli", "sft debug: unknown tool '" + args[0] + "' (available: forward)");
}

}  // namespace

SFT_REGISTER_COMMAND("debug", "developer tools: dump logits, loss, gradients for parity checks",
                     run_debug);

}  // namespace sft::cli
