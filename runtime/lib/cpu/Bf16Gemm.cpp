//===- Bf16Gemm.cpp - fsdprt_gemm_bf16 on the CPU -------------------------===//
//
// OpenBLAS has no bfloat16 product, and bf16 models on the CPU are for
// checking against the CUDA target rather than for speed: a plain loop that
// does what cuBLAS's bf16 GEMM with fp32 compute does (products summed in
// fp32, alpha * sum + beta * C rounded to bf16, to nearest even, when stored).
//
//===----------------------------------------------------------------------===//

#include "fsdprt/fsdprt.h"

#include "DType.h"
#include "GemmArguments.h"

#include <climits>
#include <cstring>

using namespace fsdprt;

static float loadBF16(const void *matrix, int64_t index) {
  uint16_t bits;
  std::memcpy(&bits, static_cast<const uint16_t *>(matrix) + index, sizeof(bits));
  return static_cast<float>(bf16ToDouble(bits));
}

extern "C" void fsdprt_gemm_bf16(int32_t trans_a, int32_t trans_b, int64_t m, int64_t n,
                                 int64_t k, float alpha, const void *a, int64_t lda,
                                 const void *b, int64_t ldb, float beta, void *c, int64_t ldc) {
  // cuBLAS's limit, so that a product the CPU takes runs on the GPU too.
  checkGemm("fsdprt_gemm_bf16", GemmShape{trans_a, trans_b, m, n, k, lda, ldb, ldc}, INT_MAX);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float sum = 0.0f;
      for (int64_t p = 0; p < k; ++p)
        sum += loadBF16(a, trans_a ? p * lda + i : i * lda + p) *
               loadBF16(b, trans_b ? j * ldb + p : p * ldb + j);
      float value = alpha * sum;
      // As in BLAS, C is not read when beta is 0 (it may hold NaNs).
      if (beta != 0.0f)
        value += beta * loadBF16(c, i * ldc + j);
      // A float is exactly a double: this is the one rounding, float to bf16.
      uint16_t bits = roundToBF16(static_cast<double>(value));
      std::memcpy(static_cast<uint16_t *>(c) + i * ldc + j, &bits, sizeof(bits));
    }
}
