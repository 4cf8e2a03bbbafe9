// Conformance of ops::embedding_forward / embedding_backward on views: f32 against the f64 CPU
// run (ids repeated, V = 1, T = 1), the forward from a bf16 table into f32 (a frozen table held
// in bf16) against the f64 run on the bf16 grid, and the f64 backward against finite
// differences.
//
// Tolerances (max |err| / max |ref|), f32: forward 0 (a copy), backward 1e-6 (dtable += a few
// rows of dout per id, summed in token order); bf16 table: 0 (widening is exact).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "conformance.h"

namespace sft::conformance {
namespace {

struct EmbeddingCase {
  int64_t V, C;
  std::vector<int64_t> ids;
};

Outputs run_embedding(const EmbeddingCase& c, const Backend& be, Mode m) {
  const int64_t T = static_cast<int64_t>(c.ids.size());
  IdBuffer ids(be, c.ids);
  Buffer table(be, m.dtype, c.V, c.C, random_values(c.V * c.C, 1, 1.0, m.grid));
  Buffer out(be, m.dtype, T, c.C, Values(T * c.C, kNaN));
  Buffer dout(be, m.dtype, T, c.C, random_values(T * c.C, 2, 1.0, m.grid));
  Buffer dtable(be, m.dtype, c.V, c.C, random_values(c.V * c.C, 3, kAccumulateStart, m.grid));
  ops::embedding_forward(out.view(), ids.data(), table.view());
  ops::embedding_backward(dtable.view(), dout.view(), ids.data());
  return {{"out", out.read()}, {"dtable", dtable.read()}};
}

// The lookup alone; in bf16 mode the table is bf16 and out f32 (the reference: f64 throughout).
Outputs run_embedding_lookup(const EmbeddingCase& c, const Backend& be, Mode m) {
  const int64_t T = static_cast<int64_t>(c.ids.size());
  IdBuffer ids(be, c.ids);
  const DType table_dtype = m.reference() ? DType::kF64 : m.dtype;
  const DType out_dtype = m.reference() ? DType::kF64 : DType::kF32;
  Buffer table(be, table_dtype, c.V, c.C, random_values(c.V * c.C, 1, 1.0, m.grid));
  Buffer out(be, out_dtype, T, c.C, Values(T * c.C, kNaN));
  ops::embedding_forward(out.view(), ids.data(), table.view());
  return {{"out", out.read()}};
}

std::vector<int64_t> cycling_ids(int64_t T, int64_t V) {
  std::vector<int64_t> ids(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t) ids[t] = (t * 7 + 3) % V;
  return ids;
}

SFT_CONFORMANCE_SUITE(ConformanceEmbedding);

TEST_P(ConformanceEmbedding, ForwardAndBackward) {
  const EmbeddingCase cases[] = {{1, 1, {0}},
                                 {6, 4, {3, 1, 3, 0, 5}},
                                 {1, 9, {0, 0, 0}},
                                 {50, 17, cycling_ids(33, 50)},
                                 {300, 129, cycling_ids(700, 300)}};
  for (const EmbeddingCase& c : cases)
    check_conformance(
        backend(),
        "embedding V=" + std::to_string(c.V) + " C=" + std::to_string(c.C) +
            " T=" + std::to_string(c.ids.size()),
        [&](const Backend& be, Mode m) { return run_embedding(c, be, m); }, {DType::kF32},
        [](DType, const std::string& out) { return out == "out" ? 0.0 : 1e-6; });
}

TEST_P(ConformanceEmbedding, ForwardFromBf16Table) {
  const EmbeddingCase cases[] = {
      {1, 1, {0}}, {6, 4, {3, 1, 3, 0, 5}}, {300, 129, cycling_ids(700, 300)}};
  for (const EmbeddingCase& c : cases)
    check_conformance(
        backend(),
        "embedding (bf16 table) V=" + std::to_string(c.V) + " C=" + std::to_string(c.C) +
            " T=" + std::to_string(c.ids.size()),
        [&](const Backend& be, Mode m) { return run_embedding_lookup(c, be, m); }, {DType::kBF16},
        uniform_tolerance(0, 0));
}

TEST(ConformanceEmbeddingReference, BackwardMatchesFiniteDifferences) {
  const int64_t V = 6, C = 3;
  const std::vector<int64_t> ids = {3, 1, 3, 0, 5};  // a repeated id accumulates; 2 and 4 unused
  const int64_t T = static_cast<int64_t>(ids.size());
  Values table = random_values(V * C, 4, 1.0, DType::kF64), out(T * C);
  const Values R = random_values(T * C, 5, 1.0, DType::kF64);
  auto f = [&] {
    ops::embedding_forward(host_view(out, T, C), ids.data(), host_view(table, V, C));
    return dot(out, R);
  };
  const Values dtable0 = random_values(V * C, 6, 1.0, DType::kF64);
  Values dtable = dtable0, dout = R;
  ops::embedding_backward(host_view(dtable, V, C), host_view(dout, T, C), ids.data());
  EXPECT_LE(fd_error(table, f, gained(dtable, dtable0)), kFdTolerance);
}

}  // namespace
}  // namespace sft::conformance
