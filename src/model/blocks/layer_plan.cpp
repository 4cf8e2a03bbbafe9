// LayerPlan. See layer_plan.h.
#include "model/blocks/layer_plan.h"

#include "core/error.h"

namespace sft::model {

LayerPlan LayerPlan::of(const ModelConfig& c, int layer, const std::string& source) {
  LayerPlan p;
  p.qk_norm = c.qk_norm;
  const size_t l = static_cast<size_t>(layer);
  if (c.sliding_window && l < c.layer_sliding_window.size() && c.layer_sliding_window[l])
    p.window = *c.sliding_window;
  if (c.hidden_act != "silu")
    fail("model", source + ": hidden_act '" + c.hidden_act +
                      "' is not supported (only silu: the gated MLP block is SwiGLU)");
  return p;
}

std::string describe(const LayerPlan& p) {
  const std::string attention = std::string(p.qk_norm ? "q/k norm, " : "") +
                                (p.window ? "window " + std::to_string(p.window) : "causal");
  return "norm · attention(" + attention + ") · add + norm · SwiGLU MLP · add";
}

}  // namespace sft::model
