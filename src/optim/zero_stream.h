// Bringing sharded training state to the writing rank one tensor at a time, for checkpoints
// and the export under ZeRO (optim/zero1.h's moments, optim/zero3.h's layer weights): the
// writer asks for a tensor when it reaches it in the file, every data-parallel rank takes part
// in that tensor's all-gather, and the tensor is freed again when the writer asks for the next
// one. So the files are written from whole tensors (the same bytes as without sharding) while
// no rank holds more than its shard plus one tensor (and its scratch).
//
// The writing rank (`root`) drives: each request is broadcast first (what and which range),
// then gathered; the other ranks sit in serve() answering requests until the root's finish()
// (also sent by the root's destructor, so a writer that throws does not leave them waiting).
// The order of requests is whatever the writer's is: the others need not know the files.
//
// Ranges are of the flat arenas: the model's trainable values (whole size on every rank, the
// layers', embedding's and LM head's runs sharded under ZeRO-3: Zero3Params::gather_range) and the
// AdamW moments (each rank holds its own shard only: gathered into scratch with
// Comm::all_gather_part).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "optim/zero1.h"
#include "optim/zero3.h"
#include "parallel/comm.h"

namespace sft {

class ZeroTensorStream {
 public:
  // values: the trainable fp32 arena (whole size); zero3 null: the weights are whole already.
  // zero1 null: no sharded moments.
  ZeroTensorStream(Comm& dp, int root, std::span<float> values, Zero3Params* zero3, Zero1* zero1);
  ~ZeroTensorStream();
  ZeroTensorStream(const ZeroTensorStream&) = delete;
  ZeroTensorStream& operator=(const ZeroTensorStream&) = delete;

  bool is_root() const { return dp_.rank() == root_; }
  // Whether moments() has sharded moments to gather, and the optimizer whose options and
  // step a checkpoint records (the own shard's: every rank's are the same).
  bool has_moments() const { return zero1_ != nullptr; }
  const AdamW& optimizer() const;
  // Root only: the whole values of [begin, end) of the arena, valid until the next request.
  const float* weights(size_t begin, size_t end);
  // Root only: exp_avg (which 0) or exp_avg_sq (1) of [begin, end), valid until the next one.
  const float* moments(int which, size_t begin, size_t end);
  // Root only: the requests are over (the others leave serve()). Called by the destructor too.
  void finish();
  // Every rank but the root: answers the root's requests until its finish().
  void serve();

  // The most bytes this rank held for the stream at once beyond its own shards (the non-own
  // part of a gathered weight range, or the moments' scratch): bounded by the largest tensor.
  size_t peak_bytes() const { return peak_bytes_; }

 private:
  enum Kind : int64_t { kEnd = 0, kWeights = 1, kExpAvg = 2, kExpAvgSq = 3 };
  // Root: broadcast the request; everyone: free the previous one and gather this one.
  const float* request(Kind kind, size_t begin, size_t end);
  const float* answer(Kind kind, size_t begin, size_t end);
  void free_held();

  Comm& dp_;
  int root_;
  std::span<float> values_;
  Zero3Params* zero3_;
  Zero1* zero1_;
  std::vector<float> scratch_;
  ShardRange held_weights_;  // gathered into values_, freed by the next request
  bool finished_ = false;
  size_t peak_bytes_ = 0;
};

}  // namespace sft
