// Embedding forward/backward on CUDA: the forward is a copy (exact); the backward adds repeated
// ids in token order like the CPU kernel, so it equals the CPU's f32 result bit for bit (and the
// f64 reference within 1e-6), with identical bits run to run. On vocabulary shards (2 and 3
// thread ranks, the last one's rows padded past the vocabulary) the forward, summed over the
// group, and the ranks' blocks of the backward are the whole table's CPU results bit for bit.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cuda_test_support.h"
#include "ops/cuda/cuda_ops.h"
#include "ops/ops.h"
#include "thread_shard_group.h"

namespace sft {
namespace {

using namespace cuda_test;  // DeviceTensor, HostTensor, filled, random_values, ...

TEST(CudaEmbedding, ForwardCopiesAndBackwardAddsInTokenOrder) {
  SFT_SKIP_WITHOUT_CUDA();
  const int64_t V = 11, C = 300;
  // Repeats near and far apart (across the 256-token tiles of the link kernel), a single use,
  // and rows never used.
  std::vector<int64_t> ids;
  for (int64_t t = 0; t < 600; ++t) ids.push_back(t % 7 == 0 ? 3 : (t * 5 + 1) % 9);
  ids.push_back(10);
  const int64_t T = static_cast<int64_t>(ids.size());
  const size_t n = size_t(T * C);
  const Values table = random_values(size_t(V * C), 1, 1.0);
  const Values dout = random_values(n, 2, 1.0), dtable0 = random_values(size_t(V * C), 3, 0x1p-10);
  const auto outs = cuda_test::run_twice([&] {
    DeviceIds I(ids);
    DeviceTensor W(DType::kF32, V, C, table), out(DType::kF32, T, C, filled(n, kNaN));
    DeviceTensor G(DType::kF32, T, C, dout), dW(DType::kF32, V, C, dtable0);
    ops::cuda::embedding_forward(out.view(), I.data(), W.view());
    ops::cuda::embedding_backward(dW.view(), G.view(), I.data());
    return std::vector<Values>{out.read(), dW.read()};
  });
  for (DType dt : {DType::kF32, DType::kF64}) {
    HostTensor W(dt, V, C, table), out(dt, T, C, filled(n, kNaN));
    HostTensor G(dt, T, C, dout), dW(dt, V, C, dtable0);
    ops::embedding_forward(out.view(), ids.data(), W.view());
    ops::embedding_backward(dW.view(), G.view(), ids.data());
    EXPECT_TRUE(cuda_test::same_bits(outs[0], out.read())) << "forward vs " << dtype_name(dt);
    if (dt == DType::kF32)
      EXPECT_TRUE(cuda_test::same_bits(outs[1], dW.read())) << "backward vs the CPU's f32";
    else
      EXPECT_LE(cuda_test::relative_error(outs[1], dW.read()), 1e-6) << "backward vs f64";
  }
}

TEST(CudaEmbedding, VocabularyShardsGiveTheWholeTablesBits) {
  SFT_SKIP_WITHOUT_CUDA();
  const int64_t V = 11, C = 70;
  std::vector<int64_t> ids;
  for (int64_t t = 0; t < 300; ++t) ids.push_back(t % 5 == 0 ? 10 : (t * 3 + 2) % 9);
  const int64_t T = static_cast<int64_t>(ids.size());
  const size_t n = size_t(T * C);
  const Values table = random_values(size_t(V * C), 1, 1.0);
  const Values dout = random_values(n, 2, 1.0), dtable0 = random_values(size_t(V * C), 3, 0x1p-10);
  HostTensor W(DType::kF32, V, C, table), out(DType::kF32, T, C, filled(n, kNaN));
  HostTensor G(DType::kF32, T, C, dout), dW(DType::kF32, V, C, dtable0);
  ops::embedding_forward(out.view(), ids.data(), W.view());
  ops::embedding_backward(dW.view(), G.view(), ids.data());
  const Values want_out = out.read(), want_dtable = dW.read();
  for (int ranks : {2, 3}) {
    SCOPED_TRACE(std::to_string(ranks) + " ranks");
    const int64_t rows = (V + ranks - 1) / ranks;
    Values padded_table = table, padded_dtable0 = dtable0;
    padded_table.resize(size_t(rows * ranks * C), 1e3);  // never looked up
    padded_dtable0.resize(size_t(rows * ranks * C), 0.5);
    std::vector<Values> outs(static_cast<size_t>(ranks)), dtables(static_cast<size_t>(ranks));
    testing::ThreadShardGroups::run(ranks, [&](ShardGroup& g) {
      const size_t r = static_cast<size_t>(g.rank());
      const int64_t begin = g.rank() * rows;
      auto block = [&](const Values& v) {
        return Values(v.begin() + begin * C, v.begin() + (begin + rows) * C);
      };
      DeviceIds I(ids);
      DeviceTensor TB(DType::kF32, rows, C, block(padded_table));
      DeviceTensor O(DType::kF32, T, C, filled(n, kNaN)), DO(DType::kF32, T, C, dout);
      DeviceTensor DT(DType::kF32, rows, C, block(padded_dtable0));
      const ops::VocabShard shard{begin, &g, rows * ranks == V ? 0 : V};
      ops::embedding_forward(O.view(), I.data(), TB.view(), shard);
      ops::embedding_backward(DT.view(), DO.view(), I.data(), shard);
      outs[r] = O.read();
      dtables[r] = DT.read();
    });
    Values dtable_all;
    for (int r = 0; r < ranks; ++r) {
      EXPECT_TRUE(cuda_test::same_bits(outs[size_t(r)], want_out)) << "forward of rank " << r;
      dtable_all.insert(dtable_all.end(), dtables[size_t(r)].begin(), dtables[size_t(r)].end());
    }
    EXPECT_TRUE(cuda_test::same_bits(Values(dtable_all.begin() + V * C, dtable_all.end()),
                                     Values(padded_dtable0.begin() + V * C, padded_dtable0.end())))
        << "the padding rows";
    dtable_all.resize(size_t(V * C));
    EXPECT_TRUE(cuda_test::same_bits(dtable_all, want_dtable)) << "backward";
  }
}

}  // namespace
}  // namespace sft
