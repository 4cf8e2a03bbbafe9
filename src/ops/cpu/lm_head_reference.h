// LM head + token cross-entropy, computed in chunks of tokens so the (T × V) logits are never
// materialised (Qwen's V is 151,936): per chunk, logits = x Wᵀ, then loss, accuracy and entropy
// per row; the backward recomputes each chunk's logits and turns them into dlogits in place.
//
// targets[t] is the id scored at position t (labels already shifted by the caller) or -1.
// Signature rule: outputs first, then inputs, weights, then sizes. dW accumulates (+=);
// dx overwrites (=). Dimensions: T tokens, C hidden, V vocab.
#pragma once

#include <cstdint>
#include <vector>

namespace sft::ops::cpu {

struct LossStats {
  double loss_sum = 0;     // Σ cross-entropy over scored tokens
  int64_t count = 0;       // scored tokens
  int64_t correct = 0;     // scored tokens whose argmax equals the target (mean_token_accuracy)
  double entropy_sum = 0;  // Σ entropy of the predicted distribution over scored tokens
};

// logits (T, V) = x Wᵀ for every row when non-null (debug dumps, generation); else only scored
// rows are computed. workspace is resized as needed and reused across calls. softcap > 0:
// each logit z is softcap · tanh(z / softcap) (Gemma's final_logit_softcapping).
template <typename T>
LossStats lm_head_loss_forward(T* logits, const T* x, const T* w, const int64_t* targets,
                               int64_t Tn, int64_t C, int64_t V, std::vector<T>& workspace,
                               T softcap = 0);

// dx (T, C) =; dw (V, C) +=; each scored token's loss is weighted by `scale` (e.g. 1 / count).
template <typename T>
void lm_head_loss_backward(T* dx, T* dw, const T* x, const T* w, const int64_t* targets, T scale,
                           int64_t Tn, int64_t C, int64_t V, std::vector<T>& workspace,
                           T softcap = 0);

}  // namespace sft::ops::cpu
