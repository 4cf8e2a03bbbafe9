// The expert-parallel exchange of rows (see expert_parallel.h).
#include "model/expert_parallel.h"

#include <string>

#include "core/error.h"
#include "ops/ops.h"

namespace sft::model {

namespace {

// A reordering of n rows as the permutation op sees it: row i of the result is row map[i].
ops::ExpertRouting reorder(const std::vector<int64_t>& map) {
  const auto n = static_cast<int64_t>(map.size());
  return {n, 1, 1, nullptr, nullptr, map.data(), map.data()};
}

std::vector<size_t> elements(const std::vector<size_t>& rows, int64_t cols) {
  std::vector<size_t> e(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) e[i] = rows[i] * static_cast<size_t>(cols);
  return e;
}

}  // namespace

void ExpertExchange::plan(ExpertGroup& group, std::span<const int64_t> offsets,
                          int64_t first_expert, int64_t end_expert) {
  const auto P = static_cast<size_t>(group.size());
  const int64_t E = static_cast<int64_t>(offsets.size()) - 1;
  const int64_t m = end_expert - first_expert;  // experts per rank
  // Rank p owns the experts [p·m, (p+1)·m): its rows are one block of the sorted rows.
  std::vector<int64_t> counts(static_cast<size_t>(E));
  for (int64_t e = 0; e < E; ++e) counts[size_t(e)] = offsets[size_t(e) + 1] - offsets[size_t(e)];
  send_rows_.assign(P, 0);
  for (size_t p = 0; p < P; ++p)
    send_rows_[p] = static_cast<size_t>(offsets[(p + 1) * size_t(m)] - offsets[p * size_t(m)]);
  // from[s·m + i]: the rows rank s sends to this rank's i-th expert.
  std::vector<int64_t> from(P * size_t(m));
  const std::vector<size_t> per_rank(P, static_cast<size_t>(m));
  group.all_to_all(counts.data(), per_rank, from.data(), per_rank, sizeof(int64_t));
  recv_rows_.assign(P, 0);
  offsets_.assign(size_t(E) + 1, 0);
  for (int64_t i = 0; i < m; ++i) {
    int64_t n = 0;
    for (size_t s = 0; s < P; ++s) {
      recv_rows_[s] += static_cast<size_t>(from[s * size_t(m) + size_t(i)]);
      n += from[s * size_t(m) + size_t(i)];
    }
    offsets_[size_t(first_expert + i) + 1] = n;
  }
  for (int64_t e = 0; e < E; ++e) offsets_[size_t(e) + 1] += offsets_[size_t(e)];
  // Arrival order: rank by rank, each rank's block in expert order. Expert order: expert by
  // expert, each expert's rows rank by rank.
  by_expert_.resize(static_cast<size_t>(offsets_[size_t(E)]));
  by_source_.resize(by_expert_.size());
  int64_t arrived = 0;
  std::vector<int64_t> next(static_cast<size_t>(m));
  for (int64_t i = 0; i < m; ++i) next[size_t(i)] = offsets_[size_t(first_expert + i)];
  for (size_t s = 0; s < P; ++s)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < from[s * size_t(m) + size_t(i)]; ++j, ++arrived) {
        const int64_t at = next[size_t(i)]++;
        by_expert_[size_t(at)] = arrived;
        by_source_[size_t(arrived)] = at;
      }
}

ops::ExpertRouting ExpertExchange::routing() const {
  const int64_t E = static_cast<int64_t>(offsets_.size()) - 1;
  return {received_rows(), 1, E, nullptr, offsets_.data(), by_source_.data(), by_expert_.data()};
}

void ExpertExchange::to_owners(ExpertGroup& group, ops::View own, ops::View local,
                               ops::View staging) const {
  const int64_t N = received_rows();
  if (own.rows != N || staging.rows != N || own.cols != local.cols || own.dtype != local.dtype)
    fail("model", "expert exchange: (" + std::to_string(own.rows) + ", " +
                      std::to_string(own.cols) + ") rows for " + std::to_string(N) +
                      " received rows of width " + std::to_string(local.cols));
  group.all_to_all(local.data, elements(send_rows_, local.cols), staging.data,
                   elements(recv_rows_, local.cols), dtype_size(local.dtype));
  if (N > 0) ops::moe_permute_forward(own, staging, reorder(by_expert_));
}

void ExpertExchange::to_sources(ExpertGroup& group, ops::View local, ops::View own,
                                ops::View staging) const {
  if (received_rows() > 0) ops::moe_permute_forward(staging, own, reorder(by_source_));
  group.all_to_all(staging.data, elements(recv_rows_, own.cols), local.data,
                   elements(send_rows_, own.cols), dtype_size(own.dtype));
}

ExpertParallel::ExpertParallel(ExpertGroup& g, int64_t experts, int64_t n_layers) : group(&g) {
  const int64_t P = g.size();
  if (experts % P != 0)
    fail("model", "--ep_size " + std::to_string(P) + ": the model's " + std::to_string(experts) +
                      " experts (num_experts / num_local_experts in config.json) do not "
                      "divide by it (hint: an --ep_size that divides the experts)");
  first_expert = experts * g.rank() / P;
  end_expert = experts * (g.rank() + 1) / P;
  layers.resize(static_cast<size_t>(n_layers));
}

}  // namespace sft::model
