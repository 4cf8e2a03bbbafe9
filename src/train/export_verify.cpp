// verify_export: reload an exported folder and prove it holds the in-memory model; see
// export.h. Both checks are exact: weights against the in-memory ones rounded to the saved
// dtype, logits against the in-memory model run on those same rounded weights.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "train/export.h"

namespace sft {

namespace {

constexpr std::string_view kComponent = "export";
constexpr int64_t kVerifyTokens = 16;

// Deterministic ids spread over the vocabulary (a stride prime to most vocab sizes).
model::Batch verify_batch(const ModelConfig& c) {
  model::Batch b;
  const int64_t T = std::max<int64_t>(1, std::min(kVerifyTokens, c.max_position_embeddings));
  for (int64_t t = 0; t < T; ++t) b.tokens.push_back((t * 7919 + 13) % c.vocab_size);
  return b;
}

std::vector<float> logits_of(model::Transformer& m, const model::Batch& batch) {
  std::vector<float> logits(batch.tokens.size() * static_cast<size_t>(m.config().vocab_size));
  m.forward(batch, logits.data());
  return logits;
}

// Index of the first element whose bits differ, or -1.
int64_t first_difference(const float* a, const float* b, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (std::memcmp(a + i, b + i, sizeof(float)) != 0) return static_cast<int64_t>(i);
  return -1;
}

std::vector<float> rounded(const Tensor& t, DType dtype) {
  return dtype == DType::kF32 ? t.to_f32_vector() : t.to(dtype).to_f32_vector();
}

}  // namespace

void verify_export(model::Transformer& model, const std::string& dir, DType dtype) {
  const model::Batch batch = verify_batch(model.config());
  std::vector<float> reloaded_logits;
  {
    model::Transformer reloaded = model::Transformer::load(dir);
    const std::vector<NamedTensor> mine = model.parameters(), theirs = reloaded.parameters();
    if (mine.size() != theirs.size())
      fail(kComponent, dir + ": the reloaded model has " + std::to_string(theirs.size()) +
                           " parameters, the trained one " + std::to_string(mine.size()));
    for (size_t i = 0; i < mine.size(); ++i) {
      const std::vector<float> want = rounded(mine[i].tensor, dtype);
      const std::vector<float> got = theirs[i].tensor.to_f32_vector();
      const int64_t at = mine[i].name != theirs[i].name || want.size() != got.size()
                             ? 0
                             : first_difference(want.data(), got.data(), want.size());
      if (at >= 0)
        fail(kComponent, dir + ": tensor '" + mine[i].name +
                             "' differs from the trained model at element " + std::to_string(at) +
                             " (hint: the written files are corrupt; export again)");
    }
    // Both sides compute as the trained model does (bf16 copies of the same weights).
    reloaded.set_compute_dtype(model.compute_dtype());
    reloaded_logits = logits_of(reloaded, batch);
  }

  // The reference: the in-memory model on weights rounded as saved (restored afterwards).
  auto refresh_copies = [&] {
    if (model.params().has_bf16_copies()) model.params().refresh_bf16_copies();
  };
  std::vector<float> backup;
  if (dtype != DType::kF32) {
    // Under sft's names (a mixture of experts' stacks whole, not as the files store them).
    for (const NamedTensor& p : model.params().named_values()) {
      const std::vector<float> v = p.tensor.to_f32_vector();
      backup.insert(backup.end(), v.begin(), v.end());
      const std::vector<float> r = rounded(p.tensor, dtype);
      std::memcpy(model.param_data(p.name), r.data(), r.size() * sizeof(float));
    }
    refresh_copies();
  }
  auto restore = [&] {
    size_t offset = 0;
    for (const NamedTensor& p : model.params().named_values()) {
      const size_t n = static_cast<size_t>(p.tensor.numel());
      std::memcpy(model.param_data(p.name), backup.data() + offset, n * sizeof(float));
      offset += n;
    }
    refresh_copies();
  };
  std::vector<float> expected;
  try {
    expected = logits_of(model, batch);
  } catch (...) {
    if (!backup.empty()) restore();
    throw;
  }
  if (!backup.empty()) restore();

  const int64_t at = first_difference(expected.data(), reloaded_logits.data(), expected.size());
  if (at >= 0) {
    const int64_t V = model.config().vocab_size;
    fail(kComponent, dir + ": logits of the reloaded model differ at token " +
                         std::to_string(at / V) + ", id " + std::to_string(at % V) + ": " +
                         std::to_string(reloaded_logits[static_cast<size_t>(at)]) + " vs " +
                         std::to_string(expected[static_cast<size_t>(at)]) +
                         " (hint: config.json does not describe the trained model)");
  }
}

}  // namespace sft
