// Bad views: on every available backend, a mismatched shape or a dtype the op has no kernel for
// gives an sft::Error whose message names the op (one test per op family), never a wrong result
// or a crash. Every view points into a buffer with room to spare, so a kernel that forgot a check
// computes garbage instead of corrupting memory, and the test reports "no error".
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "conformance.h"
#include "ops/backend.h"

namespace sft::conformance {
namespace {

using ops::AttentionDims;
using ops::AttentionSegment;

// Views of any dtype and shape on one backend, each over a zeroed buffer with spare room.
class Views {
 public:
  explicit Views(const Backend& be) : be_(be) {}
  View make(DType dt, int64_t rows, int64_t cols) {
    const int64_t n = rows * cols + 4096;
    buffers_.push_back(std::make_unique<Buffer>(be_, dt, 1, n, Values(n, 0.0)));
    View v = buffers_.back()->view();
    v.rows = rows;
    v.cols = cols;
    return v;
  }
  const int64_t* ids() {
    id_buffers_.push_back(std::make_unique<IdBuffer>(be_, std::vector<int64_t>(4096, 0)));
    return id_buffers_.back()->data();
  }

 private:
  const Backend& be_;
  std::vector<std::unique_ptr<Buffer>> buffers_;
  std::vector<std::unique_ptr<IdBuffer>> id_buffers_;
};

// Runs body(views) on the backend of the test.
template <typename F>
void on_backend(const Backend& be, F&& body) {
  SCOPED_TRACE(be.name);
  Views v(be);
  body(v);
}

constexpr DType f32 = DType::kF32, f64 = DType::kF64, bf16 = DType::kBF16;

SFT_CONFORMANCE_SUITE(ConformanceBadViews);

TEST_P(ConformanceBadViews, Matmul) {
  on_backend(backend(), [](Views& v) {
    expect_error_naming("matmul", [&] {  // K mismatch
      ops::matmul(v.make(f32, 3, 4), v.make(f32, 3, 5), v.make(f32, 6, 4), false, false, false);
    });
    expect_error_naming("matmul", [&] {  // C of the wrong shape for Aᵀ · B
      ops::matmul(v.make(f32, 3, 4), v.make(f32, 3, 5), v.make(f32, 3, 4), true, false, false);
    });
    expect_error_naming("matmul", [&] {  // bf16 C
      ops::matmul(v.make(bf16, 3, 4), v.make(f32, 3, 5), v.make(f32, 5, 4), false, false, false);
    });
  });
}

TEST_P(ConformanceBadViews, Attention) {
  const std::vector<AttentionSegment> seg = {{0, 4, 0, 4, 0}};
  const AttentionDims d{2, 1, 4, 0};  // q, out (4, 8); k, v (4, 4); lse (4, 2)
  on_backend(backend(), [&](Views& v) {
    expect_error_naming("attention", [&] {  // f64 q with f32 k, v
      ops::attention_forward(v.make(f64, 4, 8), v.make(f64, 4, 2), v.make(f64, 4, 8),
                             v.make(f32, 4, 4), v.make(f32, 4, 4), seg, d, {});
    });
    expect_error_naming("attention", [&] {  // a query past the last key
      const std::vector<AttentionSegment> past = {{0, 4, 0, 2, 0}};
      ops::attention_forward(v.make(f32, 4, 8), v.make(f32, 4, 2), v.make(f32, 4, 8),
                             v.make(f32, 4, 4), v.make(f32, 4, 4), past, d, {});
    });
  });
}

TEST_P(ConformanceBadViews, LmHead) {
  on_backend(backend(), [](Views& v) {
    expect_error_naming("lm_head", [&] {  // w of another hidden size
      ops::lm_head_cross_entropy(v.make(f32, 3, 4), v.make(f32, 7, 5), View{}, v.make(f32, 3, 4),
                                 v.make(f32, 7, 5), v.ids(), 1.0, {});
    });
    expect_error_naming("lm_head", [&] {  // dx of another shape than x
      ops::lm_head_cross_entropy(v.make(f32, 2, 4), v.make(f32, 7, 4), View{}, v.make(f32, 3, 4),
                                 v.make(f32, 7, 4), v.ids(), 1.0, {});
    });
  });
}

TEST_P(ConformanceBadViews, RmsNorm) {
  on_backend(backend(), [](Views& v) {
    expect_error_naming("rmsnorm", [&] {  // w of another width
      ops::rmsnorm_forward(v.make(f32, 2, 8), v.make(f32, 2, 1), v.make(f32, 2, 8),
                           v.make(f32, 1, 7), 1e-6);
    });
    expect_error_naming("rmsnorm", [&] {  // bf16 x
      ops::rmsnorm_forward(v.make(f32, 2, 8), v.make(f32, 2, 1), v.make(bf16, 2, 8),
                           v.make(f32, 1, 8), 1e-6);
    });
    expect_error_naming("rmsnorm", [&] {  // a bf16 out (the fused rounding) with a bf16 rstd
      ops::rmsnorm_forward(v.make(bf16, 2, 8), v.make(bf16, 2, 1), v.make(f32, 2, 8),
                           v.make(f32, 1, 8), 1e-6);
    });
    expect_error_naming("rmsnorm_backward", [&] {  // dx of another size
      ops::rmsnorm_backward(v.make(f32, 2, 7), v.make(f32, 1, 8), v.make(f32, 2, 8),
                            v.make(f32, 2, 8), v.make(f32, 2, 1), v.make(f32, 1, 8));
    });
  });
}

TEST_P(ConformanceBadViews, AddRmsNorm) {
  on_backend(backend(), [](Views& v) {
    expect_error_naming("add", [&] {  // b of another size
      ops::add_rmsnorm_forward(v.make(f32, 2, 8), v.make(f32, 2, 8), v.make(f32, 2, 1),
                               v.make(f32, 2, 8), v.make(f32, 2, 7), v.make(f32, 1, 8), 1e-6);
    });
    expect_error_naming("rmsnorm", [&] {  // w of another width
      ops::add_rmsnorm_forward(v.make(f32, 2, 8), v.make(f32, 2, 8), v.make(f32, 2, 1),
                               v.make(f32, 2, 8), v.make(f32, 2, 8), v.make(f32, 1, 7), 1e-6);
    });
    expect_error_naming("add", [&] {  // a bf16 residual
      ops::add_rmsnorm_forward(v.make(f32, 2, 8), v.make(f32, 2, 8), v.make(f32, 2, 1),
                               v.make(f32, 2, 8), v.make(bf16, 2, 8), v.make(f32, 1, 8), 1e-6);
    });
  });
}

TEST_P(ConformanceBadViews, Rope) {
  on_backend(backend(), [](Views& v) {
    expect_error_naming("rope", [&] {  // x's width not a multiple of D = 8
      ops::rope_forward(v.make(f32, 3, 12), v.make(f32, 3, 4), v.make(f32, 3, 4));
    });
    expect_error_naming("rope", [&] {  // tables for another number of tokens
      ops::rope_backward(v.make(f32, 3, 16), v.make(f32, 2, 4), v.make(f32, 2, 4));
    });
    expect_error_naming("rope", [&] {  // bf16 x
      ops::rope_forward(v.make(bf16, 3, 16), v.make(f32, 3, 4), v.make(f32, 3, 4));
    });
    expect_error_naming("rope", [&] {  // tables for 8 rotary dims of 6-dim heads
      ops::rope_forward(v.make(f32, 3, 12), v.make(f32, 3, 4), v.make(f32, 3, 4), 6);
    });
  });
}

TEST_P(ConformanceBadViews, SwiGlu) {
  on_backend(backend(), [](Views& v) {
    expect_error_naming("swiglu", [&] {
      ops::swiglu_forward(v.make(f32, 2, 5), v.make(f32, 2, 5), v.make(f32, 2, 6));
    });
    expect_error_naming("swiglu", [&] {  // a bf16 h (the fused rounding) from bf16 gate, f32 up
      ops::swiglu_forward(v.make(bf16, 2, 5), v.make(bf16, 2, 5), v.make(f32, 2, 5));
    });
    expect_error_naming("swiglu_backward", [&] {
      ops::swiglu_backward(v.make(f32, 2, 5), v.make(f32, 2, 5), v.make(f32, 1, 5),
                           v.make(f32, 2, 5), v.make(f32, 2, 5));
    });
    expect_error_naming("gelu_tanh_gated", [&] {
      ops::gelu_tanh_gated_forward(v.make(f32, 2, 5), v.make(f32, 2, 5), v.make(f32, 2, 6));
    });
    expect_error_naming("gelu_tanh_gated", [&] {  // a bf16 h from bf16 gate, f32 up
      ops::gelu_tanh_gated_forward(v.make(bf16, 2, 5), v.make(bf16, 2, 5), v.make(f32, 2, 5));
    });
    expect_error_naming("gelu_tanh_gated_backward", [&] {
      ops::gelu_tanh_gated_backward(v.make(f32, 2, 5), v.make(f32, 2, 5), v.make(f32, 1, 5),
                                    v.make(f32, 2, 5), v.make(f32, 2, 5));
    });
  });
}

TEST_P(ConformanceBadViews, Embedding) {
  on_backend(backend(), [](Views& v) {
    expect_error_naming("embedding", [&] {
      ops::embedding_forward(v.make(f32, 3, 4), v.ids(), v.make(f32, 10, 5));
    });
    expect_error_naming("embedding", [&] {  // a bf16 table looks up into f32 only
      ops::embedding_forward(v.make(bf16, 3, 4), v.ids(), v.make(bf16, 10, 4));
    });
    expect_error_naming("embedding", [&] {
      ops::embedding_forward(v.make(f32, 3, 4), v.ids(), v.make(bf16, 10, 5));
    });
    expect_error_naming("embedding_backward", [&] {
      ops::embedding_backward(v.make(f32, 10, 5), v.make(f32, 3, 4), v.ids());
    });
  });
}

TEST_P(ConformanceBadViews, Elementwise) {
  on_backend(backend(), [](Views& v) {
    expect_error_naming("add", [&] { ops::add(v.make(f32, 2, 3), v.make(f32, 3, 3)); });
    expect_error_naming("add", [&] { ops::add(v.make(bf16, 2, 3), v.make(f32, 2, 3)); });
    expect_error_naming("add", [&] {  // a rounded copy of another size
      ops::add(v.make(f32, 2, 3), v.make(f32, 2, 3), v.make(bf16, 3, 3));
    });
    expect_error_naming("add_bias", [&] { ops::add_bias(v.make(f32, 2, 3), v.make(f32, 1, 4)); });
    expect_error_naming("add_bias", [&] { ops::add_bias(v.make(bf16, 2, 3), v.make(bf16, 1, 3)); });
    expect_error_naming("bias_backward",
                        [&] { ops::bias_backward(v.make(f32, 1, 4), v.make(f32, 2, 3)); });
    expect_error_naming("add_scalar", [&] { ops::add_scalar(v.make(bf16, 2, 3), 1.0f); });
    expect_error_naming("dropout", [&] {
      ops::dropout(v.make(bf16, 2, 3), v.make(bf16, 2, 3), 0.1f, 1, 2, 0, true);
    });
    expect_error_naming("dropout", [&] {
      ops::dropout(v.make(f32, 2, 3), v.make(f32, 3, 3), 0.1f, 1, 2, 0, false);
    });
    expect_error_naming("add_uniform_noise",
                        [&] { ops::add_uniform_noise(v.make(bf16, 2, 3), 0.1f, 1, 2, 0); });
    expect_error_naming("cast", [&] { ops::cast(v.make(f64, 2, 3), v.make(bf16, 2, 3)); });
    expect_error_naming("cast", [&] { ops::cast(v.make(bf16, 2, 3), v.make(f32, 3, 3)); });
  });
}

// ---- routing by device (ops/device_dispatch.h) -----------------------------------------
// Views marked as CUDA views over host memory: every case below fails in the device check,
// before any kernel could touch the memory.

View marked(std::vector<float>& host, int64_t rows, int64_t cols, Device device) {
  host.assign(static_cast<size_t>(rows * cols) + 64, 0.0f);
  return ops::view_of(host.data(), rows, cols, device);
}

TEST(ConformanceRouting, MixedDevicesNameTheOpAndTheDevices) {
  std::vector<float> hc, ha, hb;
  const View c = marked(hc, 2, 2, Device::kCpu), a = marked(ha, 2, 2, Device::kCuda),
             b = marked(hb, 2, 2, Device::kCpu);
  const std::string devices = "views on different devices (cpu and cuda";
  expect_error_naming("matmul: " + devices, [&] { ops::matmul(c, a, b, false, false, false); });
  expect_error_naming("swiglu_forward: " + devices, [&] { ops::swiglu_forward(c, a, b); });
  expect_error_naming("add: " + devices, [&] { ops::add(c, a); });
  const std::vector<AttentionSegment> seg = {{0, 2, 0, 2, 0}};
  const AttentionDims d{1, 1, 2, 0};
  expect_error_naming("attention_forward: " + devices,
                      [&] { ops::attention_forward(c, b.first(2, 1), c, a, c, seg, d, {}); });
  expect_error_naming("adamw_update: views on different devices (cuda and cpu",
                      [&] { ops::adamw_update(a, c, c, c, {}, b); });
}

// Without CUDA compiled in, a CUDA view names its op and how to get CUDA (with it, the view
// would reach the kernels, and the memory here is not device memory).
TEST(ConformanceRouting, CudaViewsWithoutCudaSayHowToGetIt) {
  if (compiled_backends() != "cpu") GTEST_SKIP() << "this build has CUDA";
  std::vector<float> hc, ha, hb;
  const View c = marked(hc, 2, 2, Device::kCuda), a = marked(ha, 2, 2, Device::kCuda),
             b = marked(hb, 2, 2, Device::kCuda);
  const std::string how = "sft was built without CUDA; rebuild with -DSFT_CUDA=ON";
  expect_error_naming(how, [&] { ops::matmul(c, a, b, false, false, false); });
  expect_error_naming("rmsnorm_forward", [&] { ops::rmsnorm_forward(c, b, a, b, 1e-6); });
  expect_error_naming("rope_backward", [&] { ops::rope_backward(c, a, b); });
  expect_error_naming("embedding_forward", [&] { ops::embedding_forward(c, nullptr, a); });
  expect_error_naming("zero", [&] { ops::zero(c); });
  expect_error_naming("cast", [&] { ops::cast(c, a); });
  expect_error_naming("scale", [&] { ops::scale(c, 2.0f); });
  expect_error_naming("sum_of_squares", [&] { ops::sum_of_squares(c); });
  const int64_t targets[2] = {0, 1};
  expect_error_naming("lm_head_cross_entropy",
                      [&] { ops::lm_head_cross_entropy(c, a, View{}, c, a, targets, 1.0, {}); });
}

// ---- checks today's dispatch does not pass --------------------------------------------

TEST_P(ConformanceBadViews, MixedOperandDtypesNameTheOp) {
  on_backend(backend(), [](Views& v) {
    expect_error_naming("matmul", [&] {  // f32 · bf16
      ops::matmul(v.make(f32, 3, 4), v.make(f32, 3, 5), v.make(bf16, 5, 4), false, false, false);
    });
    expect_error_naming("rmsnorm", [&] {  // f64 weights for f32 rows
      ops::rmsnorm_forward(v.make(f32, 2, 8), v.make(f32, 2, 1), v.make(f32, 2, 8),
                           v.make(f64, 1, 8), 1e-6);
    });
    expect_error_naming("add", [&] { ops::add(v.make(f64, 2, 3), v.make(f32, 2, 3)); });
    expect_error_naming("lm_head", [&] {  // bf16 gradients
      ops::lm_head_cross_entropy(v.make(bf16, 3, 4), v.make(bf16, 7, 4), View{}, v.make(bf16, 3, 4),
                                 v.make(bf16, 7, 4), v.ids(), 1.0, {});
    });
  });
}

TEST_P(ConformanceBadViews, AttentionShapes) {
  const std::vector<AttentionSegment> seg = {{0, 4, 0, 4, 0}};
  const AttentionDims d{2, 1, 4, 0};  // q, out (4, 8); k, v (4, 4); lse (4, 2)
  on_backend(backend(), [&](Views& v) {
    expect_error_naming("attention", [&] {  // k of the wrong width for Hkv · D
      ops::attention_forward(v.make(f32, 4, 8), v.make(f32, 4, 2), v.make(f32, 4, 8),
                             v.make(f32, 4, 8), v.make(f32, 4, 4), seg, d, {});
    });
    expect_error_naming("attention", [&] {  // a segment past the last key row
      const std::vector<AttentionSegment> past = {{0, 4, 0, 5, 0}};
      ops::attention_forward(v.make(f32, 4, 8), v.make(f32, 4, 2), v.make(f32, 4, 8),
                             v.make(f32, 4, 4), v.make(f32, 4, 4), past, d, {});
    });
    expect_error_naming("attention", [&] {  // dq of the wrong shape
      ops::attention_backward(v.make(f32, 3, 8), v.make(f32, 4, 4), v.make(f32, 4, 4),
                              v.make(f32, 4, 8), v.make(f32, 4, 8), v.make(f32, 4, 2),
                              v.make(f32, 4, 8), v.make(f32, 4, 4), v.make(f32, 4, 4), seg, d, {});
    });
  });
}

}  // namespace
}  // namespace sft::conformance
