// Greedy / temperature / top-k / top-p token choice. See sampling.h.
#include "model/sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/error.h"

namespace sft::model {

int64_t argmax(const float* logits, int64_t V) {
  int64_t best = 0;
  for (int64_t j = 1; j < V; ++j)
    if (logits[j] > logits[best]) best = j;
  return best;
}

int64_t sample_next(std::vector<float>& logits, const SamplingOptions& o, Rng& rng) {
  const int64_t V = static_cast<int64_t>(logits.size());
  if (!o.do_sample) return argmax(logits.data(), V);
  if (!(o.temperature > 0)) fail("generate", "temperature must be > 0 when sampling");
  // Candidates sorted by logit, descending; ties keep the lower id first (stable).
  std::vector<int64_t> order(static_cast<size_t>(V));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return logits[a] > logits[b]; });
  int64_t keep = V;
  if (o.top_k > 0) keep = std::min(keep, o.top_k);
  const double mx = logits[order[0]] / o.temperature;
  std::vector<double> p(static_cast<size_t>(keep));
  double sum = 0;
  for (int64_t r = 0; r < keep; ++r) {
    p[r] = std::exp(logits[order[r]] / o.temperature - mx);
    sum += p[r];
  }
  if (o.top_p < 1.0) {
    // Keep a token while the mass of the tokens ranked above it is < top_p (at least one).
    double above = 0;
    int64_t r = 0;
    while (r < keep && (r == 0 || above < o.top_p)) {
      above += p[r] / sum;
      ++r;
    }
    keep = r;
    sum = std::accumulate(p.begin(), p.begin() + keep, 0.0);
  }
  const double u = static_cast<double>(rng.uniform()) * sum;
  double acc = 0;
  for (int64_t r = 0; r < keep; ++r) {
    acc += p[r];
    if (u < acc) return order[r];
  }
  return order[keep - 1];
}

}  // namespace sft::model
