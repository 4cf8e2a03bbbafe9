// The view-level ops of ops/ops.h on CUDA views reach the ops::cuda:: kernel of the same name
// with the same arguments (ops/device_dispatch.h): each op run through ops:: gives the bits of
// the direct ops::cuda:: call on the same inputs, and no output is left NaN (the LM head with
// its softcap too). Views on two devices fail naming the op, as does an op without a CUDA
// kernel.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "cuda_test_support.h"
#include "ops/cuda/cuda_ops.h"
#include "ops/ops.h"

namespace sft {
namespace {

using namespace cuda_test;  // DeviceTensor, HostTensor, filled, random_values, ...

constexpr DType f32 = DType::kF32, bf16 = DType::kBF16;

// run(routed) → the outputs; routed through ops:: and direct to ops::cuda:: must give the same
// bits, with every element written.
void expect_routed(const std::string& op, const std::function<std::vector<Values>(bool)>& run) {
  SCOPED_TRACE(op);
  const std::vector<Values> routed = run(true), direct = run(false);
  ASSERT_EQ(routed.size(), direct.size());
  for (size_t i = 0; i < routed.size(); ++i) {
    EXPECT_TRUE(cuda_test::same_bits(routed[i], direct[i])) << "output " << i;
    for (double x : routed[i]) ASSERT_FALSE(std::isnan(x)) << "output " << i << " left NaN";
  }
}

TEST(CudaRouting, ViewLevelOpsReachTheCudaKernels) {
  SFT_SKIP_WITHOUT_CUDA();
  const int64_t N = 5, C = 8, K = 6;
  const size_t n = size_t(N * C);
  const Values x = random_values(n, 1, 1.0), y = random_values(n, 2, 1.0);
  const Values z = random_values(n, 3, 1.0), w = random_values(size_t(C), 4, 0.3, f32, 1);
  const Values xb = random_values(n, 5, 1.0, bf16), yb = random_values(n, 6, 1.0, bf16);
  const Values a = random_values(size_t(N * K), 7, 1.0), b = random_values(size_t(K * C), 8, 1.0);

  expect_routed("matmul", [&](bool routed) {
    DeviceTensor A(f32, K, N, a), B(f32, C, K, b), Out(f32, N, C, y);
    if (routed)
      ops::matmul(Out.view(), A.view(), B.view(), true, true, true);
    else
      ops::cuda::matmul(Out.view(), A.view(), B.view(), true, true, true);
    return std::vector<Values>{Out.read()};
  });
  expect_routed("matmul bf16", [&](bool routed) {
    const Values ab = random_values(size_t(N * K), 9, 1.0, bf16);
    const Values bb = random_values(size_t(K * C), 10, 1.0, bf16);
    DeviceTensor A(bf16, N, K, ab), B(bf16, K, C, bb), Out(f32, N, C, filled(n, kNaN));
    if (routed)
      ops::matmul(Out.view(), A.view(), B.view(), false, false, false);
    else
      ops::cuda::matmul(Out.view(), A.view(), B.view(), false, false, false);
    return std::vector<Values>{Out.read()};
  });
  expect_routed("rmsnorm", [&](bool routed) {
    DeviceTensor X(f32, N, C, x), W(f32, 1, C, w), G(f32, N, C, y);
    DeviceTensor out(f32, N, C, filled(n, kNaN)), rstd(f32, N, 1, filled(size_t(N), kNaN));
    DeviceTensor dx(f32, N, C, filled(n, kNaN)), dw(f32, 1, C, filled(size_t(C), 0.5));
    if (routed) {
      ops::rmsnorm_forward(out.view(), rstd.view(), X.view(), W.view(), 1e-6);
      ops::rmsnorm_backward(dx.view(), dw.view(), G.view(), X.view(), rstd.view(), W.view());
    } else {
      ops::cuda::rmsnorm_forward(out.view(), rstd.view(), X.view(), W.view(), 1e-6);
      ops::cuda::rmsnorm_backward(dx.view(), dw.view(), G.view(), X.view(), rstd.view(), W.view());
    }
    return std::vector<Values>{out.read(), rstd.read(), dx.read(), dw.read()};
  });
  // Forward on one tensor, backward on another: a swapped direction changes the bits.
  expect_routed("rope", [&](bool routed) {
    const Values cs = random_values(size_t(N * 2), 11, 1.0),
                 sn = random_values(size_t(N * 2), 12, 1.0);
    DeviceTensor X(f32, N, C, x), D(f32, N, C, y), Cos(f32, N, 2, cs), Sin(f32, N, 2, sn);
    if (routed) {
      ops::rope_forward(X.view(), Cos.view(), Sin.view());
      ops::rope_backward(D.view(), Cos.view(), Sin.view());
    } else {
      ops::cuda::rope_forward(X.view(), Cos.view(), Sin.view(), 0);
      ops::cuda::rope_backward(D.view(), Cos.view(), Sin.view(), 0);
    }
    return std::vector<Values>{X.read(), D.read()};
  });
  expect_routed("swiglu f32 and bf16", [&](bool routed) {
    DeviceTensor G(f32, N, C, x), U(f32, N, C, y), Dh(f32, N, C, z);
    DeviceTensor Gb(bf16, N, C, xb), Ub(bf16, N, C, yb);
    DeviceTensor h(f32, N, C, filled(n, kNaN)), dg(f32, N, C, filled(n, kNaN)),
        du(f32, N, C, filled(n, kNaN)), hb(f32, N, C, filled(n, kNaN)),
        dgb(f32, N, C, filled(n, kNaN)), dub(f32, N, C, filled(n, kNaN));
    if (routed) {
      ops::swiglu_forward(h.view(), G.view(), U.view());
      ops::swiglu_backward(dg.view(), du.view(), Dh.view(), G.view(), U.view());
      ops::swiglu_forward(hb.view(), Gb.view(), Ub.view());
      ops::swiglu_backward(dgb.view(), dub.view(), Dh.view(), Gb.view(), Ub.view());
    } else {
      ops::cuda::swiglu_forward(h.view(), G.view(), U.view());
      ops::cuda::swiglu_backward(dg.view(), du.view(), Dh.view(), G.view(), U.view());
      ops::cuda::swiglu_forward(hb.view(), Gb.view(), Ub.view());
      ops::cuda::swiglu_backward(dgb.view(), dub.view(), Dh.view(), Gb.view(), Ub.view());
    }
    return std::vector<Values>{h.read(), dg.read(), du.read(), hb.read(), dgb.read(), dub.read()};
  });
  expect_routed("embedding", [&](bool routed) {
    const int64_t V = 7;
    const DeviceIds ids(std::vector<int64_t>{3, 0, 6, 3, 1});
    DeviceTensor table(f32, V, C, random_values(size_t(V * C), 13, 1.0));
    DeviceTensor out(f32, N, C, filled(n, kNaN)), dtable(f32, V, C, filled(size_t(V * C), 0.25));
    DeviceTensor dout(f32, N, C, y);
    if (routed) {
      ops::embedding_forward(out.view(), ids.data(), table.view());
      ops::embedding_backward(dtable.view(), dout.view(), ids.data());
    } else {
      ops::cuda::embedding_forward(out.view(), ids.data(), table.view());
      ops::cuda::embedding_backward(dtable.view(), dout.view(), ids.data());
    }
    return std::vector<Values>{out.read(), dtable.read()};
  });
  expect_routed("add, add_bias, bias_backward, scale, zero", [&](bool routed) {
    DeviceTensor D(f32, N, C, x), S(f32, N, C, y), Sb(bf16, N, C, xb), B(f32, 1, C, w);
    DeviceTensor Y(f32, N, C, z), db(f32, 1, C, filled(size_t(C), 0.5)), Z(f32, 1, C, w);
    if (routed) {
      ops::add(D.view(), S.view());
      ops::add(D.view(), Sb.view());
      ops::add_bias(Y.view(), B.view());
      ops::bias_backward(db.view(), D.view());
      ops::scale(Y.view(), 0.37f);
      ops::zero(Z.view());
    } else {
      ops::cuda::add(D.view(), S.view());
      ops::cuda::add(D.view(), Sb.view());
      ops::cuda::add_bias(Y.view(), B.view());
      ops::cuda::bias_backward(db.view(), D.view());
      ops::cuda::scale(Y.view(), 0.37f);
      ops::cuda::zero(Z.view());
    }
    return std::vector<Values>{D.read(), Y.read(), db.read(), Z.read()};
  });
  expect_routed("cast", [&](bool routed) {
    DeviceTensor X(f32, N, C, x), Xb(bf16, N, C, xb);
    DeviceTensor to_bf16(bf16, N, C, filled(n, 0)), to_f32(f32, N, C, filled(n, kNaN)),
        copy(f32, N, C, filled(n, kNaN));
    if (routed) {
      ops::cast(to_bf16.view(), X.view());
      ops::cast(to_f32.view(), Xb.view());
      ops::cast(copy.view(), X.view());
    } else {
      ops::cuda::cast(to_bf16.view(), X.view());
      ops::cuda::cast(to_f32.view(), Xb.view());
      ops::cuda::cast(copy.view(), X.view());
    }
    return std::vector<Values>{to_bf16.read(), to_f32.read(), copy.read()};
  });
  expect_routed("adamw_update, sum_of_squares", [&](bool routed) {
    const ops::AdamWScalars k{-1e-3f, 0.05f, 1e-8f, 0.1f, 0.999f, 0.001f, 0.99999f, true};
    Values v0 = random_values(n, 14, 0.01);
    for (double& e : v0) e = double(float(e * e));
    DeviceTensor P(f32, N, C, x), G(f32, N, C, y), M(f32, N, C, z), V(f32, N, C, v0);
    DeviceTensor copy(bf16, N, C, filled(n, 0));
    double norm = 0;
    if (routed) {
      ops::adamw_update(P.view(), G.view(), M.view(), V.view(), k, copy.view());
      norm = ops::sum_of_squares(P.view());
    } else {
      ops::cuda::adamw_update(P.view(), G.view(), M.view(), V.view(), k, copy.view());
      norm = ops::cuda::sum_of_squares(P.view());
    }
    return std::vector<Values>{P.read(), M.read(), V.read(), copy.read(), Values{norm}};
  });
  expect_routed("attention_forward, attention_backward", [&](bool routed) {
    const std::vector<ops::AttentionSegment> seg = {{0, 2, 0, 2, 0}, {2, 3, 2, 3, 0}};
    const ops::AttentionDims d{2, 1, 4, 0};  // q (5, 8), k, v (5, 4)
    DeviceTensor Q(bf16, N, C, xb), K(bf16, N, 4, random_values(20, 15, 1.0, bf16)),
        V(bf16, N, 4, random_values(20, 16, 1.0, bf16)), DO(f32, N, C, y);
    DeviceTensor O(bf16, N, C, filled(n, kNaN)), L(f32, N, 2, filled(10, kNaN)),
        DQ(f32, N, C, filled(n, kNaN)), DK(f32, N, 4, filled(20, kNaN)),
        DV(f32, N, 4, filled(20, kNaN));
    if (routed) {
      ops::attention_forward(O.view(), L.view(), Q.view(), K.view(), V.view(), seg, d, {});
      ops::attention_backward(DQ.view(), DK.view(), DV.view(), DO.view(), O.view(), L.view(),
                              Q.view(), K.view(), V.view(), seg, d, {});
    } else {
      ops::cuda::attention_forward(O.view(), L.view(), Q.view(), K.view(), V.view(), seg, d, {});
      ops::cuda::attention_backward(DQ.view(), DK.view(), DV.view(), DO.view(), O.view(), L.view(),
                                    Q.view(), K.view(), V.view(), seg, d, {});
    }
    return std::vector<Values>{O.read(), L.read(), DQ.read(), DK.read(), DV.read()};
  });
  expect_routed("lm_head_cross_entropy", [&](bool routed) {
    const int64_t V = 7;
    DeviceTensor X(f32, N, C, x), W(f32, V, C, random_values(size_t(V * C), 15, 0.3));
    DeviceTensor dX(f32, N, C, filled(n, kNaN)), dW(f32, V, C, filled(size_t(V * C), 0));
    DeviceTensor L(f32, N, V, filled(size_t(N * V), kNaN));
    const DeviceIds targets(std::vector<int64_t>{3, -1, 0, 6, 2});
    const ops::LmHeadStats s =
        routed ? ops::lm_head_cross_entropy(dX.view(), dW.view(), L.view(), X.view(), W.view(),
                                            targets.data(), 0.5, {}, {}, 2.0)
               : ops::cuda::lm_head_cross_entropy(dX.view(), dW.view(), L.view(), X.view(),
                                                  W.view(), targets.data(), 0.5, {}, {}, 2.0);
    return std::vector<Values>{
        dX.read(), dW.read(), L.read(),
        Values{s.loss_sum, s.entropy_sum, double(s.count), double(s.correct)}};
  });
}

TEST(CudaRouting, MixedDevicesFailNamingTheOp) {
  SFT_SKIP_WITHOUT_CUDA();
  DeviceTensor q(f32, 2, 2, filled(4, 0)), k(f32, 2, 2, filled(4, 0));
  DeviceTensor out(f32, 2, 2, filled(4, 0)), lse(f32, 2, 1, filled(2, 0));
  std::vector<float> host(4, 0.0f);
  const ops::View cpu = ops::view_of(host.data(), 2, 2);
  expect_error("matmul: views on different devices (cuda and cpu",
               [&] { ops::matmul(out.view(), q.view(), cpu, false, false, false); });
  expect_error("rmsnorm_forward: views on different devices (cpu and cuda",
               [&] { ops::rmsnorm_forward(cpu, lse.view(), q.view(), k.view(), 1e-6); });
}

TEST(CudaRouting, AnOpWithoutACudaKernelFailsNamingIt) {
  SFT_SKIP_WITHOUT_CUDA();
  // matmul_4bit (QLoRA's frozen base) has only its CPU kernel so far.
  DeviceTensor packed(f32, 1, 2, filled(2, 0)), absmax(f32, 1, 1, filled(1, 1));
  DeviceTensor a(f32, 2, 4, filled(8, 0)), c(f32, 2, 4, filled(8, 0));
  ops::Weight4Bit w{packed.view(), absmax.view(), 4, 4};
  w.packed.dtype = DType::kU8;
  expect_error("matmul_4bit: no CUDA kernel yet",
               [&] { ops::matmul_4bit(c.view(), a.view(), w, true, false); });
}

}  // namespace
}  // namespace sft
