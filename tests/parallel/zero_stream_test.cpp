// ZeRO's tensor-at-a-time gathering for checkpoints and the export (optim/zero_stream.h) on
// however many ranks this binary runs (alone, and under mpirun -np 2 / 3 via mpi_tests.cmake):
// rank 0 asks for tensors in any order and gets the whole weights (ZeRO-3's sharded layers)
// and moments (ZeRO-1's own shards), no rank holds more than one tensor for it at once, the
// layers are sharded again afterwards, and a safetensors file written from the stream has the
// bytes of the one written from whole arrays.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "optim/zero1.h"
#include "optim/zero3.h"
#include "optim/zero_stream.h"
#include "parallel/comm.h"
#include "parallel/test_world.h"

namespace sft {
namespace {

using test::world;

// A 3-layer arena (as zero23_test's): 5 outside, layer runs of 301, 0 and 4099, 7 outside;
// its tensors, asked for out of order, one across a layer's end pages.
const std::vector<ShardRange> kRuns = {{5, 306}, {306, 306}, {306, 4405}};
constexpr size_t kN = 4412;
const std::vector<ShardRange> kTensors = {
    {1000, 4405}, {0, 5}, {306, 1000}, {4405, 4412}, {5, 306}};
constexpr size_t kLargest = 3405;

float weight(size_t i) {
  return float(i) * 0.25f + 1;
}
float avg(size_t i) {
  return float(i % 89) - 40.5f;
}
float avg_sq(size_t i) {
  return float(i % 13) / 8.0f + 0.125f;
}

// Every rank: a sharded arena and moments, as training leaves them.
struct Sharded {
  std::vector<float> values = std::vector<float>(kN);
  Zero3Params zero3{kN, kRuns, world()};
  Zero1 zero1{kN, AdamWOptions{}, world()};
  Sharded() {
    for (size_t i = 0; i < kN; ++i) values[i] = weight(i);
    zero3.release_layers(values, {});
    const ShardRange s = zero1.shard();
    AdamW& opt = zero1.shard_optimizer();
    std::span<float> m = opt.exp_avg().mutable_values<float>();
    std::span<float> v = opt.exp_avg_sq().mutable_values<float>();
    for (size_t i = s.begin; i < s.end; ++i) {
      m[i - s.begin] = avg(i);
      v[i - s.begin] = avg_sq(i);
    }
    opt.set_steps_taken(7);
  }
  // Own shard or outside the layers: whole; the rest of the layers: zero.
  size_t not_sharded() const {
    const ShardRange mine = world().my_shard(kN);
    size_t bad = 0;
    for (size_t i = 0; i < kN; ++i) {
      const bool kept =
          world().size() == 1 || i < 5 || i >= 4405 || (i >= mine.begin && i < mine.end);
      bad += values[i] != (kept ? weight(i) : 0.0f);
    }
    return bad;
  }
};

TEST(ZeroTensorStream, TheRootGetsWholeTensorsOneAtATime) {
  Comm& c = world();
  Sharded s;
  ASSERT_EQ(s.not_sharded(), 0u);
  ZeroTensorStream stream(c, 0, s.values, &s.zero3, &s.zero1);
  if (stream.is_root()) {
    size_t bad = 0;
    for (const ShardRange& t : kTensors) {
      const float* w = stream.weights(t.begin, t.end);
      for (size_t i = t.begin; i < t.end; ++i) bad += w[i - t.begin] != weight(i);
      const float* m = stream.moments(0, t.begin, t.end);
      for (size_t i = t.begin; i < t.end; ++i) bad += m[i - t.begin] != avg(i);
      const float* v = stream.moments(1, t.begin, t.end);
      for (size_t i = t.begin; i < t.end; ++i) bad += v[i - t.begin] != avg_sq(i);
    }
    EXPECT_EQ(bad, 0u);
    EXPECT_EQ(stream.optimizer().steps_taken(), 7);
    stream.finish();
  } else {
    stream.serve();
  }
  // Every rank held one tensor at a time: the moments' scratch of the largest one.
  EXPECT_EQ(stream.peak_bytes(), kLargest * sizeof(float));
  EXPECT_EQ(s.not_sharded(), 0u);
}

TEST(ZeroTensorStream, AWriterThatStopsEarlyReleasesTheOthers) {
  Comm& c = world();
  Sharded s;
  {
    ZeroTensorStream stream(c, 0, s.values, &s.zero3, &s.zero1);
    if (stream.is_root())
      stream.weights(306, 1000);  // then "throws": the destructor ends the requests
    else
      stream.serve();
  }
  EXPECT_EQ(s.not_sharded(), 0u);
}

std::string file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

TEST(ZeroTensorStream, AStreamedFileHasTheBytesOfTheWholeOne) {
  Comm& c = world();
  Sharded s;
  std::vector<float> whole(kN), whole_avg(kN);
  for (size_t i = 0; i < kN; ++i) {
    whole[i] = weight(i);
    whole_avg[i] = avg(i);
  }
  // Weights and moments of every tensor, named so the data order differs from the list's.
  std::vector<NamedTensor> from_whole, headers;
  for (size_t k = 0; k < kTensors.size(); ++k) {
    const ShardRange t = kTensors[k];
    const Shape shape = {static_cast<int64_t>(t.size())};
    const std::string name = "t" + std::to_string(kTensors.size() - k);
    from_whole.push_back({name, Tensor::borrow(DType::kF32, shape, &whole[t.begin], nullptr)});
    from_whole.push_back(
        {"exp_avg." + name, Tensor::borrow(DType::kF32, shape, &whole_avg[t.begin], nullptr)});
    headers.push_back({name, Tensor::borrow(DType::kF32, shape, nullptr, nullptr)});
    headers.push_back({"exp_avg." + name, Tensor::borrow(DType::kF32, shape, nullptr, nullptr)});
  }
  ZeroTensorStream stream(c, 0, s.values, &s.zero3, &s.zero1);
  if (!stream.is_root()) {
    stream.serve();
    return;
  }
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("sft_zero_stream_" + std::to_string(::getpid())))
          .string();
  std::filesystem::create_directories(dir);
  write_safetensors(dir + "/whole.safetensors", from_whole, {{"format", "pt"}});
  write_safetensors(dir + "/streamed.safetensors", headers, {{"format", "pt"}}, [&](size_t i) {
    const ShardRange t = kTensors[i / 2];
    const float* p = i % 2 ? stream.moments(0, t.begin, t.end) : stream.weights(t.begin, t.end);
    return std::span<const std::byte>(reinterpret_cast<const std::byte*>(p), t.size() * 4);
  });
  stream.finish();
  const std::string a = file_bytes(dir + "/whole.safetensors");
  EXPECT_GT(a.size(), kN * 8);
  EXPECT_TRUE(a == file_bytes(dir + "/streamed.safetensors"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sft
