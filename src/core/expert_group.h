// ExpertGroup: the ranks that split a mixture of experts' experts between them (an
// expert-parallel group), as the model sees it: rank r of size() owns experts
// [r·E/size, (r+1)·E/size) of every expert layer, and rows of activations travel to the
// rank owning their expert and back by all-to-all exchanges.
//
// It lives in core so that model/ can use a group without knowing parallel/; parallel/
// implements it over a Comm (parallel/groups.h). A run without expert parallelism passes no
// group at all (null), never a group of one.
#pragma once

#include <cstddef>
#include <span>

namespace sft {

class ExpertGroup {
 public:
  virtual ~ExpertGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // send holds one block per rank in rank order (send_counts[r] elements of elem_size bytes
  // go to rank r); afterwards recv holds the block from each rank in rank order
  // (recv_counts[r] elements from rank r). Host memory; elem_size 1, 2, 4 or 8.
  virtual void all_to_all(const void* send, std::span<const size_t> send_counts, void* recv,
                          std::span<const size_t> recv_counts, size_t elem_size) = 0;
};

}  // namespace sft
