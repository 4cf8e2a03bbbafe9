// Conformance of the mixture-of-experts ops (ops/ops.h: moe_router_*, moe_permute_*,
// grouped_matmul*, moe_combine_*): f32 (and bf16 operands where the op takes them) against the
// f64 CPU run, reruns bit-identical, the stable token sort against a hand-made routing and the
// backwards against float64 finite differences. On a device the routing's arrays are device
// memory (ops/moe.h): the test uploads the host sort's arrays and reads the router's ids back.
//
// Tolerances (max |err| / max |ref|): 1e-5 for the router (an exp and a division per element),
// the permutation (copies and sums of k rows), the combine (k products per element) and the
// grouped GEMMs (each group one ops::matmul: matmul_test.cpp's 1e-5, bf16 operands included).
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "conformance.h"

namespace sft::conformance {
namespace {

// A fixed routing of T tokens over E experts, k per token; expert 3 gets no token (a group of
// zero rows), expert 0 many.
struct Routed {
  int64_t T = 9, k = 2, E = 5;
  std::vector<int64_t> expert_of, offsets, row_of, token_of;
  Routed() {
    const int64_t choice[9][2] = {{0, 1}, {2, 0}, {1, 4}, {0, 2}, {4, 1},
                                  {0, 4}, {2, 1}, {1, 0}, {4, 2}};
    for (const auto& c : choice) expert_of.insert(expert_of.end(), {c[0], c[1]});
    sort();
  }
  // T tokens over E experts by a fixed arithmetic rule, two distinct experts per token: groups
  // of about 2T/E rows that are not multiples of the grouped GEMMs' padding quantum (32)
  // (grouped_matmul.cpp's padded rows).
  Routed(int64_t tokens, int64_t experts) : T(tokens), E(experts) {
    for (int64_t t = 0; t < T; ++t) {
      const int64_t first = (t * 7 + t / 5) % E;
      expert_of.insert(expert_of.end(), {first, (first + 1 + t % (E - 1)) % E});
    }
    sort();
  }
  void sort() {
    offsets.resize(static_cast<size_t>(E + 1));
    row_of.resize(expert_of.size());
    token_of.resize(expert_of.size());
    ops::moe_sort_tokens(offsets.data(), row_of.data(), token_of.data(), expert_of.data(), T, k, E);
  }
  int64_t R() const { return T * k; }
  ops::ExpertRouting routing() const {
    return {T, k, E, expert_of.data(), offsets.data(), row_of.data(), token_of.data()};
  }
};

Values ids_as_values(const std::vector<int64_t>& ids) {
  return Values(ids.begin(), ids.end());
}

// Integer ids in a backend's memory, written by the host or by a kernel and read back.
class Ids {
 public:
  Ids(const Backend& be, const std::vector<int64_t>& ids) : be_(be), n_(ids.size()) {
    data_ = static_cast<int64_t*>(be.allocate(std::max<size_t>(1, n_) * sizeof(int64_t)));
    if (n_ > 0) be.upload(data_, ids.data(), n_ * sizeof(int64_t));
  }
  ~Ids() { be_.release(data_); }
  Ids(const Ids&) = delete;
  Ids& operator=(const Ids&) = delete;
  int64_t* data() const { return data_; }
  std::vector<int64_t> read() const {
    std::vector<int64_t> host(n_);
    if (n_ > 0) be_.download(host.data(), data_, n_ * sizeof(int64_t));
    return host;
  }

 private:
  const Backend& be_;
  size_t n_;
  int64_t* data_ = nullptr;
};

// A routing's arrays on a backend.
struct RoutingOn {
  Ids expert_of, offsets, row_of, token_of;
  ops::ExpertRouting routing;
  RoutingOn(const Backend& be, const Routed& r)
      : expert_of(be, r.expert_of),
        offsets(be, r.offsets),
        row_of(be, r.row_of),
        token_of(be, r.token_of),
        routing{r.T, r.k, r.E, expert_of.data(), offsets.data(), row_of.data(), token_of.data()} {}
};

TEST(ConformanceMoeSort, StableCountingSortByExpert) {
  const Routed r;
  EXPECT_EQ(r.offsets, (std::vector<int64_t>{0, 5, 10, 14, 14, 18}));
  // Expert 0's rows: tokens 0, 1, 3, 5, 7 in token order; expert 3 has none.
  EXPECT_EQ(std::vector<int64_t>(r.token_of.begin(), r.token_of.begin() + 5),
            (std::vector<int64_t>{0, 1, 3, 5, 7}));
  for (int64_t i = 0; i < r.R(); ++i) {
    EXPECT_EQ(r.token_of[static_cast<size_t>(r.row_of[static_cast<size_t>(i)])], i / r.k);
    const int64_t e = r.expert_of[static_cast<size_t>(i)];
    EXPECT_GE(r.row_of[static_cast<size_t>(i)], r.offsets[static_cast<size_t>(e)]);
    EXPECT_LT(r.row_of[static_cast<size_t>(i)], r.offsets[static_cast<size_t>(e + 1)]);
  }
  std::vector<int64_t> bad = r.expert_of, o(6), ro(bad.size()), to(bad.size());
  bad[3] = 5;
  expect_error_naming("moe_sort_tokens", [&] {
    ops::moe_sort_tokens(o.data(), ro.data(), to.data(), bad.data(), r.T, r.k, r.E);
  });
}

SFT_CONFORMANCE_SUITE(ConformanceMoe);

Outputs run_router(const Backend& be, Mode m, int64_t T, int64_t E, int64_t k, bool normalize) {
  Buffer L(be, m.dtype, T, E, random_values(static_cast<size_t>(T * E), 1, 2.0, m.grid));
  Buffer P(be, m.dtype, T, E, Values(static_cast<size_t>(T * E), kNaN));
  Buffer W(be, m.dtype, T, k, Values(static_cast<size_t>(T * k), kNaN));
  Buffer DW(be, m.dtype, T, k, random_values(static_cast<size_t>(T * k), 2, 1.0, m.grid));
  Buffer DP(be, m.dtype, T, E, random_values(static_cast<size_t>(T * E), 3, 0.1, m.grid));
  Buffer DL(be, m.dtype, T, E, Values(static_cast<size_t>(T * E), kNaN));
  const Ids chosen(be, std::vector<int64_t>(static_cast<size_t>(T * k), -1));
  ops::moe_router_forward(P.view(), W.view(), chosen.data(), L.view(), k, normalize);
  ops::moe_router_backward(DL.view(), DW.view(), DP.view(), P.view(), chosen.data(), normalize);
  return {{"probs", P.read()},
          {"weights", W.read()},
          {"expert_of", ids_as_values(chosen.read())},
          {"dlogits", DL.read()}};
}

TEST_P(ConformanceMoe, Router) {
  for (bool normalize : {true, false})
    for (const std::array<int64_t, 3> c :
         {std::array<int64_t, 3>{1, 2, 1}, {13, 5, 2}, {37, 8, 3}, {6, 64, 8}}) {
      const int64_t T = c[0], E = c[1], k = c[2];
      check_conformance(
          backend(),
          "router T=" + std::to_string(T) + " E=" + std::to_string(E) + " k=" + std::to_string(k) +
              (normalize ? " normalised" : ""),
          [&](const Backend& be, Mode m) { return run_router(be, m, T, E, k, normalize); },
          {DType::kF32}, uniform_tolerance(1e-5));
    }
}

// The load-balancing statistics: counts and probability mass per expert, onto sums that hold
// values already, over every token and with the odd tokens as padding. The backend's kernel
// sums the tokens in order as the CPU's (f32 only): the CPU's bits, and the counts by hand.
TEST_P(ConformanceMoe, RouterLoad) {
  const Backend& be = backend();
  const int64_t T = 37, E = 6, k = 3;
  std::vector<int64_t> chosen(static_cast<size_t>(T * k));
  std::vector<uint8_t> odd(static_cast<size_t>(T));
  std::vector<double> counts(static_cast<size_t>(E), 0), padded_counts = counts;
  for (int64_t t = 0; t < T; ++t) {
    odd[static_cast<size_t>(t)] = t % 2;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t e = (t * 5 + j * 2 + t / 3) % E;  // distinct per token: j·2 mod 6 < 6
      chosen[static_cast<size_t>(t * k + j)] = e;
      counts[static_cast<size_t>(e)] += 1;
      if (t % 2 == 0) padded_counts[static_cast<size_t>(e)] += 1;
    }
  }
  const Values probs = random_values(static_cast<size_t>(T * E), 22, 1.0, DType::kF32);
  const Values start = random_values(static_cast<size_t>(2 * E), 23, 3.0, DType::kBF16);
  auto load = [&](const Backend& on, bool padded) {
    Buffer P(on, DType::kF32, T, E, probs), S(on, DType::kF32, 2, E, start);
    const Ids ids(on, chosen);
    // The padding bytes in the backend's memory (an id buffer holds them: 8 bytes per token).
    const Ids pad(on, std::vector<int64_t>(static_cast<size_t>(T), 0));
    on.upload(pad.data(), odd.data(), odd.size());
    ops::moe_router_load(S.view(), P.view(), ids.data(), k,
                         padded ? reinterpret_cast<const uint8_t*>(pad.data()) : nullptr);
    return S.read();
  };
  for (bool padded : {false, true}) {
    const Values got = load(be, padded), ref = load(reference_backend(), padded);
    EXPECT_TRUE(bit_identical(got, ref)) << (padded ? "padded" : "all tokens");
    for (int64_t e = 0; e < E; ++e)
      EXPECT_EQ(got[static_cast<size_t>(e)] - start[static_cast<size_t>(e)],
                (padded ? padded_counts : counts)[static_cast<size_t>(e)])
          << "expert " << e;
  }
}

// The permutation, the three grouped GEMMs of an expert MLP and the combine, on one routing.
Outputs run_expert_ops(const Backend& be, Mode m, const Routed& rt) {
  const RoutingOn on(be, rt);
  const ops::ExpertRouting& r = on.routing;
  const int64_t T = rt.T, R = rt.R(), E = rt.E, C = 24, I = 10;
  const DType f = m.dtype == DType::kBF16 ? DType::kF32 : m.dtype;  // outputs and gradients
  auto n = [](int64_t a, int64_t b) { return static_cast<size_t>(a * b); };
  Buffer X(be, m.dtype, T, C, random_values(n(T, C), 4, 1.0, m.grid));
  Buffer XS(be, m.dtype, R, C, Values(n(R, C), kNaN));
  // gate_up (E·2I, C): each expert's gate rows, then its up rows.
  Buffer W(be, m.dtype, E * 2 * I, C, random_values(n(E * 2 * I, C), 5, 0.3, m.grid));
  Buffer G(be, f, R, I, Values(n(R, I), kNaN));
  Buffer U(be, f, R, I, Values(n(R, I), kNaN));
  Buffer DG(be, m.dtype, R, I, random_values(n(R, I), 6, 1.0, m.grid));
  Buffer DU(be, m.dtype, R, I, random_values(n(R, I), 7, 1.0, m.grid));
  Buffer DXS(be, f, R, C, Values(n(R, C), kNaN));
  Buffer DW(be, f, E * 2 * I, C, random_values(n(E * 2 * I, C), 8, kAccumulateStart, m.grid));
  Buffer DX(be, f, T, C, Values(n(T, C), kNaN));
  const ops::ExpertBlock gate{I, 2 * I, 0}, up{I, 2 * I, I};
  ops::moe_permute_forward(XS.view(), X.view(), r);
  ops::grouped_matmul(G.view(), XS.view(), W.view(), r, gate, true, false);
  ops::grouped_matmul(U.view(), XS.view(), W.view(), r, up, true, false);
  ops::grouped_matmul(DXS.view(), DG.view(), W.view(), r, gate, false, false);
  ops::grouped_matmul(DXS.view(), DU.view(), W.view(), r, up, false, true);
  ops::grouped_matmul_weight_grad(DW.view(), DG.view(), XS.view(), r, gate);
  ops::grouped_matmul_weight_grad(DW.view(), DU.view(), XS.view(), r, up);
  ops::moe_permute_backward(DX.view(), DXS.view(), r);
  Outputs out = {{"xs", XS.read()},   {"gate", G.read()}, {"up", U.read()},
                 {"dxs", DXS.read()}, {"dw", DW.read()},  {"dx", DX.read()}};
  // The combine runs in f32 (f64): ys, weights and out are fp32 under bf16 compute too.
  Buffer YS(be, f, R, C, random_values(n(R, C), 9, 1.0, m.grid));
  Buffer WT(be, f, T, rt.k, random_values(n(T, rt.k), 10, 1.0, m.grid));
  Buffer DOUT(be, f, T, C, random_values(n(T, C), 11, 1.0, m.grid));
  Buffer OUT(be, f, T, C, Values(n(T, C), kNaN));
  Buffer DYS(be, f, R, C, Values(n(R, C), kNaN));
  Buffer DWT(be, f, T, rt.k, Values(n(T, rt.k), kNaN));
  ops::moe_combine_forward(OUT.view(), YS.view(), WT.view(), r);
  ops::moe_combine_backward(DYS.view(), DWT.view(), DOUT.view(), YS.view(), WT.view(), r);
  out.insert(out.end(), {{"out", OUT.read()}, {"dys", DYS.read()}, {"dweights", DWT.read()}});
  return out;
}

TEST_P(ConformanceMoe, PermuteGroupedMatmulCombine) {
  const Routed small;
  check_conformance(
      backend(), "expert MLP ops",
      [&](const Backend& be, Mode m) { return run_expert_ops(be, m, small); },
      {DType::kF32, DType::kBF16}, uniform_tolerance(1e-5, 1e-5));
}

// Groups of 45–58 rows, padded to 64 under bf16 (f32 multiplies the exact groups): the first
// three over the next groups' rows, the last over the rows before it (saved and restored, also
// under accumulate). The small routing above, shorter than one padded group, takes the
// zero-padded copies.
TEST_P(ConformanceMoe, GroupedMatmulPaddedGroups) {
  const Routed wide(97, 4);
  ASSERT_EQ(wide.offsets, (std::vector<int64_t>{0, 58, 104, 149, 194}));
  check_conformance(
      backend(), "expert MLP ops, padded groups",
      [&](const Backend& be, Mode m) { return run_expert_ops(be, m, wide); },
      {DType::kF32, DType::kBF16}, uniform_tolerance(1e-5, 1e-5));
}

// ---- float64 finite differences ------------------------------------------------------------

TEST(ConformanceMoeReference, RouterBackwardMatchesFiniteDifferences) {
  const int64_t T = 7, E = 6, k = 3;
  for (bool normalize : {true, false}) {
    Values logits = random_values(T * E, 12, 1.5, DType::kF64);
    const Values RW = random_values(T * k, 13, 1.0, DType::kF64);
    const Values RP = random_values(T * E, 14, 1.0, DType::kF64);
    std::vector<int64_t> chosen(T * k);
    Values probs(T * E), weights(T * k);
    auto f = [&] {
      ops::moe_router_forward(host_view(probs, T, E), host_view(weights, T, k), chosen.data(),
                              host_view(logits, T, E), k, normalize);
      return dot(weights, RW) + dot(probs, RP);
    };
    f();
    Values dl(T * E, kNaN), dw = RW, dp = RP;
    ops::moe_router_backward(host_view(dl, T, E), host_view(dw, T, k), host_view(dp, T, E),
                             host_view(probs, T, E), chosen.data(), normalize);
    EXPECT_LE(fd_error(logits, f, dl), kFdTolerance) << (normalize ? "normalised" : "raw");
  }
}

TEST(ConformanceMoeReference, ExpertOpsBackwardMatchFiniteDifferences) {
  const Routed rt;
  const ops::ExpertRouting r = rt.routing();
  const int64_t T = rt.T, R = rt.R(), E = rt.E, C = 5, I = 4;
  const ops::ExpertBlock gate{I, 2 * I, 0};
  Values x = random_values(T * C, 15, 1.0, DType::kF64);
  Values w = random_values(E * 2 * I * C, 16, 1.0, DType::kF64);
  const Values RG = random_values(R * I, 17, 1.0, DType::kF64);
  // f = Σ grouped_matmul(permute(x), W_gate)ᵀ ⊙ RG: its gradients by the three backward ops.
  Values xs(R * C), g(R * I);
  auto f = [&] {
    ops::moe_permute_forward(host_view(xs, R, C), host_view(x, T, C), r);
    ops::grouped_matmul(host_view(g, R, I), host_view(xs, R, C), host_view(w, E * 2 * I, C), r,
                        gate, true, false);
    return dot(g, RG);
  };
  f();
  Values dg = RG, dxs(R * C, kNaN), dx(T * C, kNaN), dw(E * 2 * I * C, 0.0);
  ops::grouped_matmul(host_view(dxs, R, C), host_view(dg, R, I), host_view(w, E * 2 * I, C), r,
                      gate, false, false);
  ops::moe_permute_backward(host_view(dx, T, C), host_view(dxs, R, C), r);
  ops::grouped_matmul_weight_grad(host_view(dw, E * 2 * I, C), host_view(dg, R, I),
                                  host_view(xs, R, C), r, gate);
  EXPECT_LE(fd_error(x, f, dx), kFdTolerance);
  EXPECT_LE(fd_error(w, f, dw), kFdTolerance);

  // The combine: f = Σ out ⊙ RO over ys and the weights.
  Values ys = random_values(R * C, 18, 1.0, DType::kF64);
  Values wt = random_values(T * rt.k, 19, 1.0, DType::kF64);
  const Values RO = random_values(T * C, 20, 1.0, DType::kF64);
  Values out(T * C);
  auto fc = [&] {
    ops::moe_combine_forward(host_view(out, T, C), host_view(ys, R, C), host_view(wt, T, rt.k), r);
    return dot(out, RO);
  };
  Values dout = RO, dys(R * C, kNaN), dwt(T * rt.k, kNaN);
  ops::moe_combine_backward(host_view(dys, R, C), host_view(dwt, T, rt.k), host_view(dout, T, C),
                            host_view(ys, R, C), host_view(wt, T, rt.k), r);
  EXPECT_LE(fd_error(ys, fc, dys), kFdTolerance);
  EXPECT_LE(fd_error(wt, fc, dwt), kFdTolerance);
}

}  // namespace
}  // namespace sft::conformance
