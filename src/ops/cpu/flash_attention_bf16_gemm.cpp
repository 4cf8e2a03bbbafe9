// The bf16 attention's tile product, chosen once per process (flash_attention_bf16.h): AMX when
// the CPU and the kernel allow it (amx.h); else, with AVX-512, the operands widened to fp32 and
// multiplied by the fp32 attention's register blocks (flash_attention_bf16_widened.cpp); else a
// portable loop over the same padded layouts that multiplies the bf16 values widened to fp32
// (each product exact) and adds them into C in ascending K, a pair at a time:
// c += a[2r]·b[2r] + a[2r + 1]·b[2r + 1].
#include "ops/cpu/amx.h"
#include "ops/cpu/cpu_features.h"
#include "ops/cpu/flash_attention_bf16.h"
#include "ops/matmul_path.h"

namespace sft::ops::flash_bf16 {

namespace {

void gemm_generic(float* c, int64_t ldc, const bf16* a, int64_t lda, const bf16* b, int64_t ldb,
                  int64_t M, int64_t N, int64_t K, bool accumulate, Causal) {
  for (int64_t m = 0; m < M; ++m) {
    float* cr = c + m * ldc;
    if (!accumulate)
      for (int64_t n = 0; n < N; ++n) cr[n] = 0.0f;
    const bf16* ar = a + m * lda;
    for (int64_t r = 0; r < K / 2; ++r) {
      const float a0 = widen(ar[2 * r]), a1 = widen(ar[2 * r + 1]);
      const bf16* br = b + r * ldb;
      for (int64_t n = 0; n < N; ++n) cr[n] += a0 * widen(br[2 * n]) + a1 * widen(br[2 * n + 1]);
    }
  }
}

// AMX computes the causal diagonal's zero terms too (they cost a tile op, not a register block).
void gemm_amx(float* c, int64_t ldc, const bf16* a, int64_t lda, const bf16* b, int64_t ldb,
              int64_t M, int64_t N, int64_t K, bool accumulate, Causal) {
  cpu::gemm_bf16_amx(c, ldc, a, lda, b, ldb, M, N, K, accumulate);
}

void nothing() {}

}  // namespace

const TileGemm& tile_gemm() {
  static const TileGemm chosen = [] {
    if (cpu::use_amx()) return TileGemm{cpu::amx_begin, cpu::amx_end, gemm_amx, true, "amx"};
    if (cpu::use_avx512())
      return TileGemm{nothing, nothing, gemm_widened_avx512, true, "avx512 widened"};
    return TileGemm{nothing, nothing, gemm_generic, false, "generic"};
  }();
  return chosen;
}

}  // namespace sft::ops::flash_bf16

namespace sft::ops {

std::string attention_bf16_path() {
  const std::string_view name = flash_bf16::tile_gemm().name;
  if (name == "amx") return "AMX tiles (tdpbf16ps, fp32 sums)";
  if (name == "avx512 widened")
    return "fp32 register blocks on widened bf16 tiles (no AMX here, or capped by "
           "ONEDNN_MAX_CPU_ISA: exact products, fp32 sums)";
  return "portable loop on widened bf16 values (no AVX-512 here, or SFT_CPU_ISA=generic)";
}

}  // namespace sft::ops
