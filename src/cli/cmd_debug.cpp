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

#include "cli/command_line.h"
#include "cli/command_registry.h"
#include "core/error.h"
#include "io/json.h"
#include "io/options.h"
#include "io/safetensors.h"
#include "model/transformer.h"
#include "train/adapter_io.h"

namespace sft::cli {

namespace {

constexpr const char* kUsage =
    "usage: sft debug forward --model PATH --tokens FILE.json --out FILE.safetensors\n"
    "                         [--backward] [--activations]\n\n"
    "FILE.json: {\"input_ids\": [...], \"labels\": [...], \"doc_lengths\": [...]}; labels\n"
    "(-100 = ignored) default to input_ids, doc_lengths to one document.\n"
    "Writes logits (f32 [T, V]) and loss (f32, mean over shifted labelled targets).\n";

struct ForwardFlags {
  std::string model, tokens, out;
  bool backward = false, activations = false;
};

OptionSet forward_options(ForwardFlags& f) {
  OptionSet o("debug forward");
  o.add_string("model", &f.model, "input", "model folder or Hub id");
  o.add_string("tokens", &f.tokens, "input", "FILE.json with input_ids, labels, doc_lengths");
  o.add_string("out", &f.out, "output", "FILE.safetensors to write");
  o.add_bool("backward", &f.backward, "output",
             "also grad.<parameter name> for every parameter (of that mean loss)");
  o.add_bool("activations", &f.activations, "output",
             "also act.<name> for every named intermediate (layers.N.attn_norm, ...)");
  return o;
}

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
  ForwardFlags f;
  OptionSet options = forward_options(f);
  if (!parse_command_line("debug forward", kUsage, options, args)) return 0;
  if (f.model.empty() || f.tokens.empty() || f.out.empty()) return usage_error(kUsage);
  const Json j = read_json_file(f.tokens, "debug");
  if (!j.is_object())
    fail_in_file("debug", {f.tokens, ""}, "expected a JSON object", "give {\"input_ids\": [...]}");
  model::Batch batch{id_list(j, "input_ids", f.tokens, true), id_list(j, "labels", f.tokens, false),
                     id_list(j, "doc_lengths", f.tokens, false)};
  if (batch.labels.empty()) batch.labels = batch.tokens;

  model::Transformer m = load_model_source(resolve_model_source(f.model));  // or an adapter
  const int64_t T = static_cast<int64_t>(batch.tokens.size()), V = m.config().vocab_size;
  Tensor logits = Tensor::zeros(DType::kF32, {T, V});
  const model::LossStats s = m.forward(batch, logits.mutable_values<float>().data());
  Tensor loss = Tensor::zeros(DType::kF32, {});
  loss.mutable_values<float>()[0] =
      s.count ? static_cast<float>(s.loss_sum / static_cast<double>(s.count))
              : std::numeric_limits<float>::quiet_NaN();
  std::vector<NamedTensor> out = {{"logits", logits}, {"loss", loss}};
  if (f.activations)
    for (const NamedTensor& a : m.activations()) out.push_back({"act." + a.name, a.tensor.clone()});
  if (f.backward && s.count > 0) {
    m.zero_grad();
    m.backward(1.0f / static_cast<float>(s.count));
    for (const NamedTensor& g : m.gradients()) out.push_back({"grad." + g.name, g.tensor});
  }
  write_safetensors(f.out, out);
  std::printf("tokens %lld, documents %zu, targets %lld, loss %.6f -> %s\n",
              static_cast<long long>(T),
              batch.doc_lengths.empty() ? size_t{1} : batch.doc_lengths.size(),
              static_cast<long long>(s.count), double(loss.values<float>()[0]), f.out.c_str());
  return 0;
}

int run_debug(const Args& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    if (args.empty()) return usage_error(kUsage);
    ForwardFlags f;
    std::printf("%s%s", kUsage, forward_options(f).help().c_str());
    return 0;
  }
  if (args[0] == "forward") return run_debug_forward(Args(args.begin() + 1, args.end()));
  fail_usage("cli", "sft debug: unknown tool '" + args[0] + "' (available: forward)");
}

}  // namespace

SFT_REGISTER_COMMAND("debug", "developer tools: dump logits, loss, gradients for parity checks",
                     run_debug);

}  // namespace sft::cli
