// Internal to the CUDA LM head (lm_head.cpp drives, lm_head.cu holds the kernels): the launches
// of one row chunk's gather, row pass and scatter. Plain C++, so the host driver needs no nvcc.
//
// Layout of a chunk's logits Z (mp × V, f32): vocabulary-block-major, block b (the vocabulary
// rows [v0, v0 + nb), v0 = b·VB) at Z + v0·mp as a dense (mp × nb) matrix, so that every
// product of a block (Z_b = X Wᵀ_b, dX += dZ_b W_b, dW_b += dZ_bᵀ X) is a dense cuBLASLt call.
// The bf16 dlogits (when there are) have the same layout in their own buffer.
#pragma once

#include <cstdint>

namespace sft::ops::cuda::lm_head_detail {

// The row pass of one chunk (one block per chunk row, mp of them; rows past m only zero their
// dlogits). Per scored row: optional bf16 rounding of the logits (autocast's bf16 lm_head
// output), the softcap, the first maximum, the exp sums in double, the row's loss, entropy and
// correct flag (written at loss[i], entropy[i], correct[i]); with grad, dZ = scale · (softmax −
// onehot) · (1 − tanh²) into dz16 (bf16) or in place in z. A row with target −1 (present only
// when logits are wanted) gets its logits and zero dlogits. logits (T × V) gets the chunk rows'
// logits after the softcap when non-null.
struct RowPass {
  float* z = nullptr;
  uint16_t* dz16 = nullptr;
  float* logits = nullptr;
  const int64_t* rows = nullptr;     // (m) the chunk's rows of x, device
  const int64_t* targets = nullptr;  // (T) device
  double *loss = nullptr, *entropy = nullptr;
  int* correct = nullptr;
  int64_t m = 0, mp = 0, V = 0, VB = 0;
  float scale = 1, softcap = 0;
  bool round_logits = false, grad = false;
};
void launch_row_pass(const RowPass& p);

// xs (mp × C) = the rows of x named by rows[0, m), then zero rows; float or bf16 bits.
void launch_gather(float* xs, const float* x, const int64_t* rows, int64_t m, int64_t mp,
                   int64_t C);
void launch_gather(uint16_t* xs, const uint16_t* x, const int64_t* rows, int64_t m, int64_t mp,
                   int64_t C);
// dx[rows[i]] = dxs[i] for i < m (rows are distinct).
void launch_scatter(float* dx, const float* dxs, const int64_t* rows, int64_t m, int64_t C);

}  // namespace sft::ops::cuda::lm_head_detail
