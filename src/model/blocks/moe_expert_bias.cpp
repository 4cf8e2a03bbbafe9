// Per-expert biases on permuted rows. See moe_expert_bias.h.
#include "model/blocks/moe_expert_bias.h"

#include "core/error.h"
#include "ops/ops.h"

namespace sft::model {

namespace {

// The loops read the routing's offsets on the host: a device's routing arrays live in device
// memory (ops/moe.h), so a device run is refused here rather than read through its pointers.
void require_host(const ops::View& y, const char* what) {
  if (y.device != Device::kCpu)
    fail("model", std::string(what) +
                      ": the experts' biases (gpt-oss) are added on the CPU only so far "
                      "(hint: --use_cpu true trains it on the CPU)");
}

}  // namespace

void add_expert_bias(ops::View y, ops::View bias, const ops::ExpertRouting& r, int64_t first) {
  require_host(y, "add_expert_bias");
  for (int64_t e = 0; e < r.experts; ++e) {
    const int64_t n = r.count(e);
    if (n == 0) continue;
    ops::add_bias(y.row_range(r.offsets[e], n), bias.row_range(e, 1).columns(first, y.cols));
  }
}

void expert_bias_backward(ops::View dbias, ops::View dy, const ops::ExpertRouting& r,
                          int64_t first) {
  require_host(dy, "expert_bias_backward");
  for (int64_t e = 0; e < r.experts; ++e) {
    const int64_t n = r.count(e);
    if (n == 0) continue;
    ops::bias_backward(dbias.row_range(e, 1).columns(first, dy.cols),
                       dy.row_range(r.offsets[e], n));
  }
}

}  // namespace sft::model
