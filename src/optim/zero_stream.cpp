#include "optim/zero_stream.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/error.h"

namespace sft {

ZeroTensorStream::ZeroTensorStream(Comm& dp, int root, std::span<float> values, Zero3Params* zero3,
                                   Zero1* zero1)
    : dp_(dp), root_(root), values_(values), zero3_(zero3), zero1_(zero1) {
  if (root < 0 || root >= dp.size())
    fail("optim", "ZeRO tensor stream: root " + std::to_string(root) + " of " +
                      std::to_string(dp.size()) + " ranks");
}

ZeroTensorStream::~ZeroTensorStream() {
  if (!is_root() || finished_) return;
  try {
    finish();
  } catch (...) {  // a failed collective already ends the job (parallel/comm.h)
  }
}

const AdamW& ZeroTensorStream::optimizer() const {
  if (!zero1_) fail("optim", "ZeRO tensor stream: no sharded optimizer");
  return zero1_->shard_optimizer();
}

const float* ZeroTensorStream::weights(size_t begin, size_t end) {
  // Whole on every rank (ZeRO-1/2, or gathered already): nothing to ask the others for.
  if (!zero3_ || !zero3_->sharded()) {
    if (begin > end || end > values_.size())
      fail("optim", "ZeRO tensor stream: weights [" + std::to_string(begin) + ", " +
                        std::to_string(end) + ") outside " + std::to_string(values_.size()));
    return values_.data() + begin;
  }
  return request(kWeights, begin, end);
}

const float* ZeroTensorStream::moments(int which, size_t begin, size_t end) {
  if (which != 0 && which != 1)
    fail("optim", "ZeRO tensor stream: moment " + std::to_string(which));
  return request(which == 0 ? kExpAvg : kExpAvgSq, begin, end);
}

void ZeroTensorStream::finish() {
  if (!is_root()) fail("optim", "ZeRO tensor stream: finish() on a serving rank");
  if (finished_) return;
  finished_ = true;
  request(kEnd, 0, 0);
}

void ZeroTensorStream::serve() {
  if (is_root()) fail("optim", "ZeRO tensor stream: serve() on the writing rank");
  for (;;) {
    std::vector<int64_t> req(3, 0);
    dp_.broadcast(std::span<int64_t>(req), root_);
    const Kind kind = static_cast<Kind>(req[0]);
    answer(kind, static_cast<size_t>(req[1]), static_cast<size_t>(req[2]));
    if (kind == kEnd) return;
  }
}

const float* ZeroTensorStream::request(Kind kind, size_t begin, size_t end) {
  if (!is_root()) fail("optim", "ZeRO tensor stream: a request from a serving rank");
  if (finished_ && kind != kEnd) fail("optim", "ZeRO tensor stream: a request after finish()");
  std::vector<int64_t> req = {kind, static_cast<int64_t>(begin), static_cast<int64_t>(end)};
  dp_.broadcast(std::span<int64_t>(req), root_);
  return answer(kind, begin, end);
}

void ZeroTensorStream::free_held() {
  if (held_weights_.size() > 0 && zero3_)
    zero3_->release_range(values_, held_weights_.begin, held_weights_.end);
  held_weights_ = {};
}

const float* ZeroTensorStream::answer(Kind kind, size_t begin, size_t end) {
  free_held();
  if (kind == kEnd) {
    scratch_ = {};
    return nullptr;
  }
  const size_t n = kind == kWeights ? values_.size() : zero1_ ? zero1_->num_params() : 0;
  if (begin > end || end > n)
    fail("optim", "ZeRO tensor stream: range [" + std::to_string(begin) + ", " +
                      std::to_string(end) + ") outside " + std::to_string(n) + " elements");
  const ShardRange own = dp_.my_shard(n);
  const size_t own_lo = std::clamp(own.begin, begin, end), own_hi = std::clamp(own.end, begin, end);
  const size_t others_bytes = (end - begin - (own_hi - own_lo)) * sizeof(float);
  if (kind == kWeights) {
    if (zero3_ && zero3_->sharded()) {
      zero3_->gather_range(values_, begin, end);
      held_weights_ = {begin, end};
      peak_bytes_ = std::max(peak_bytes_, others_bytes);
    }
    return values_.data() + begin;
  }
  // The moments: the own part copied in at its place, the rest from the other ranks.
  scratch_.assign(end - begin, 0.0f);
  peak_bytes_ = std::max(peak_bytes_, scratch_.size() * sizeof(float));
  const AdamW& shard = zero1_->shard_optimizer();
  const Tensor& moment = kind == kExpAvg ? shard.exp_avg() : shard.exp_avg_sq();
  const float* mine = moment.values<float>().data();
  const ShardRange z = zero1_->shard();
  if (own_hi > own_lo)
    std::memcpy(scratch_.data() + (own_lo - begin), mine + (own_lo - z.begin),
                (own_hi - own_lo) * sizeof(float));
  dp_.all_gather_part(scratch_, n, begin);
  return scratch_.data();
}

}  // namespace sft
