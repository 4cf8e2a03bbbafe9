// ShardGroup: the ranks that each hold one slice of the same tensors (a tensor-parallel
// group), as the model and the kernels see it. They combine activations and statistics
// through it: element-wise sums and maxima, and gathers of evenly split arrays. Every rank
// ends with the same bits (the implementation reduces in a fixed rank order).
//
// It lives in core so that ops/ and model/ can use a group without knowing parallel/; parallel/
// implements it over a Comm (parallel/groups.h). A run without tensor parallelism passes no
// group at all (null), never a group of one.
#pragma once

#include <cstdint>
#include <span>

namespace sft {

class ShardGroup {
 public:
  virtual ~ShardGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // In place, element-wise over the ranks; identical on every rank afterwards.
  virtual void sum(std::span<float> values) = 0;
  virtual void sum(std::span<double> values) = 0;
  virtual void max(std::span<float> values) = 0;
  virtual void max(std::span<double> values) = 0;
  // In place: values.size() divides by size(); rank r contributes the r-th of size() equal
  // blocks, and afterwards every rank holds all of them.
  virtual void gather(std::span<float> values) = 0;
};

}  // namespace sft
