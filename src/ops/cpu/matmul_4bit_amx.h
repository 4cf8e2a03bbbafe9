// ops::matmul_4bit's AMX path: bf16 activations times a 4-bit W, W dequantized a panel at a time
// straight into VNNI tiles and multiplied by our own tile product (amx.h, amx_pack.h), where
// the library path (matmul_4bit.cpp) dequantizes into a plain bf16 panel that oneDNN then
// repacks into its own layout on every call.
//
// Shapes and blocking: A (M × K, the activations) is packed into tiles once per call and
// streams; W is dequantized into B's tiles a panel at a time (columns × a range of K, ~1 MiB)
// by amx_panels.h's driver, which runs every row of A against each panel. Each output element
// is one ascending sum over all of K on the tiles, so the bits do not depend on the thread
// count or the panel width.
// Numerics: tdpbf16ps (bf16 pairs multiplied and summed in fp32, denormal inputs as zero), so
// results differ from oneDNN's in the last bits, as two fp32 summation orders do.
#pragma once

#include "ops/ops.h"

namespace sft::ops::cpu {

// Whether matmul_4bit_amx serves this call: a is bf16 and use_amx().
bool matmul_4bit_amx_applies(const View& a);

// c (M, N) =, or += with accumulate, a · op(W); shapes and dtypes checked by the caller.
// extra's r columns are packed as k tiles after K's (zero-padded to the tile's 32), so each
// output element sums W's k tiles, then the term's, in one accumulation. A bf16 c (not with
// accumulate) receives that fp32 sum rounded once, as it leaves the tiles (amx_panels.h).
void matmul_4bit_amx(View c, View a, const Weight4Bit& w, bool trans_w, bool accumulate,
                     const LowRankTerm& extra = {});

// The library path (matmul_4bit.cpp: plain panels into ops::matmul / matmul_bf16), which
// matmul_4bit takes for f32 activations and without AMX; by name for the tests and the bench.
// extra: a second library product added to c. A bf16 c: the fp32 result in a scratch of the
// calling thread, then rounded into c.
void matmul_4bit_library(View c, View a, const Weight4Bit& w, bool trans_w, bool accumulate,
                         const LowRankTerm& extra = {});

}  // namespace sft::ops::cpu
