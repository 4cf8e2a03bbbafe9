// StackedLinear: q, k and v of a layer without biases stack into one projection over their own
// arena rows (values, gradients, bf16 copies); parts with a bias, an adapter, or rows that do
// not follow each other do not; and the stacked products equal the separate Linears' (within
// fp32 summation order), gradients landing in each part's own rows.
#include <gtest/gtest.h>

#include <vector>

#include "core/rng.h"
#include "model/decoder_layer.h"
#include "model/transformer.h"
#include "thread_shard_group.h"
#include "tp_test_models.h"

namespace sft::model {
namespace {

Transformer tiny(bool biases, DType compute) {
  Transformer m = Transformer::random(test::tp_tiny_config(biases, /*tied=*/false), 3);
  m.set_compute_dtype(compute);
  m.zero_grad();
  return m;
}

std::vector<float> random_floats(int64_t n, uint64_t stream) {
  Rng rng(11, stream);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = rng.normal();
  return v;
}

// max |a − b| / max |b|.
double relative_error(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, mag = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    diff = std::max(diff, double(std::abs(a[i] - b[i])));
    mag = std::max(mag, double(std::abs(b[i])));
  }
  return diff / mag;
}

TEST(StackedLinear, QkvOfALayerWithoutBiasesStackOverTheirArenaRows) {
  Transformer m = tiny(false, DType::kBF16);
  const DecoderLayer d = DecoderLayer::bind(m.params(), m.config(), 1);
  const std::optional<StackedLinear> s =
      StackedLinear::of({&d.attention.q, &d.attention.k, &d.attention.v});
  ASSERT_TRUE(s.has_value());
  const int64_t rows =
      d.attention.q.out_features() + d.attention.k.out_features() + d.attention.v.out_features();
  EXPECT_EQ(s->value.rows, rows);
  EXPECT_EQ(s->value.cols, d.attention.q.in_features());
  EXPECT_EQ(s->value.data, d.attention.q.weight->value.data);
  EXPECT_EQ(s->grad.data, d.attention.q.weight->grad.data);
  EXPECT_EQ(s->grad.rows, rows);
  EXPECT_EQ(s->bf16.data, d.attention.q.weight->bf16.data);
  EXPECT_EQ(s->bf16.rows, rows);
}

TEST(StackedLinear, BiasesAdaptersOutputSumsAndGapsDoNotStack) {
  Transformer with_bias = tiny(true, DType::kBF16);
  const DecoderLayer b = DecoderLayer::bind(with_bias.params(), with_bias.config(), 0);
  EXPECT_FALSE(StackedLinear::of({&b.attention.q, &b.attention.k, &b.attention.v}).has_value());

  Transformer m = tiny(false, DType::kBF16);
  const AttentionBlock d = DecoderLayer::bind(m.params(), m.config(), 0).attention;
  EXPECT_FALSE(StackedLinear::of({&d.q, &d.v}).has_value()) << "k's rows lie between";
  EXPECT_FALSE(StackedLinear::of({&d.k, &d.q}).has_value()) << "out of order";
  EXPECT_FALSE(StackedLinear::of({}).has_value());
  LoraAdapter adapter;  // only its presence is looked at
  Linear with_adapter = d.k;
  with_adapter.lora = &adapter;
  EXPECT_FALSE(StackedLinear::of({&d.q, &with_adapter, &d.v}).has_value());
  testing::ThreadShardGroups::run(1, [&](ShardGroup& group) {
    Linear summed = d.v;
    summed.sum_output = &group;
    EXPECT_FALSE(StackedLinear::of({&d.q, &d.k, &summed}).has_value());
  });
}

// Forward and backward, stacked against the three Linears, in fp32 and with bf16 inputs.
TEST(StackedLinear, ProductsAndGradientsAreTheSeparateLinears) {
  for (const DType compute : {DType::kF32, DType::kBF16}) {
    SCOPED_TRACE(dtype_name(compute));
    Transformer m = tiny(false, compute);
    const DecoderLayer d = DecoderLayer::bind(m.params(), m.config(), 0);
    const std::optional<StackedLinear> s =
        StackedLinear::of({&d.attention.q, &d.attention.k, &d.attention.v});
    ASSERT_TRUE(s.has_value());
    const int64_t N = 7, I = d.attention.q.in_features(), Q = d.attention.q.out_features(),
                  KV = d.attention.k.out_features();
    const int64_t O = Q + 2 * KV;
    std::vector<float> x32 = random_floats(N * I, 1), dy32 = random_floats(N * O, 2);
    std::vector<uint16_t> x16(x32.size()), dy16(dy32.size());
    ops::View x = ops::view_of(x32.data(), N, I), dy = ops::view_of(dy32.data(), N, O);
    if (compute == DType::kBF16) {  // the layer's rounded inputs and output gradients
      ops::cast(ops::view_of(x16.data(), N, I), x);
      ops::cast(ops::view_of(dy16.data(), N, O), dy);
      x = ops::view_of(x16.data(), N, I);
      dy = ops::view_of(dy16.data(), N, O);
    }
    // Forward: y's column blocks against each part's own output.
    std::vector<float> y(static_cast<size_t>(N * O)), part(static_cast<size_t>(N * O));
    const ops::View Y = ops::view_of(y.data(), N, O), P = ops::view_of(part.data(), N, O);
    s->forward(Y, x);
    d.attention.q.forward(P.columns(0, Q), x);
    d.attention.k.forward(P.columns(Q, KV), x);
    d.attention.v.forward(P.columns(Q + KV, KV), x);
    EXPECT_LE(relative_error(y, part), 1e-6);
    // Backward: dx and the three weights' gradients (which start at zero).
    std::vector<float> dx(static_cast<size_t>(N * I)), dx_parts(dx.size());
    s->backward(ops::view_of(dx.data(), N, I), dy, x);
    const ops::View grad = s->grad;
    const std::vector<float> stacked_grad(grad.as<float>(), grad.as<float>() + grad.numel());
    m.params().zero_grads();
    const ops::View dxp = ops::view_of(dx_parts.data(), N, I);
    const ops::View no_scratch;  // bf16 dy comes already rounded
    d.attention.q.backward(dxp, dy.columns(0, Q), x, no_scratch);
    d.attention.k.backward(dxp, dy.columns(Q, KV), x, no_scratch, true);
    d.attention.v.backward(dxp, dy.columns(Q + KV, KV), x, no_scratch, true);
    EXPECT_LE(relative_error(dx, dx_parts), 1e-6);
    const std::vector<float> part_grads(grad.as<float>(), grad.as<float>() + grad.numel());
    EXPECT_LE(relative_error(stacked_grad, part_grads), 1e-6);
  }
}

}  // namespace
}  // namespace sft::model
