//===- Bf16Gemm.cpp - fsdprt_gemm_bf16(_batched) on the CPU ---------------===//
//
// What cuBLAS's bf16 GEMM with fp32 compute does: products summed in fp32,
// alpha * sum + beta * C rounded to bf16, to nearest even, when stored
// (docs/MixedPrecision.md). A product of two bf16 values is exact in fp32, so
// widening A and B to fp32 and calling the fp32 GEMM (fsdprt_sgemm) is this
// arithmetic; only the order of the sums is BLAS's.
//
//===----------------------------------------------------------------------===//

#include "fsdprt/fsdprt.h"

#include "DType.h"
#include "GemmArguments.h"

#include <climits>
#include <vector>

using namespace fsdprt;

namespace {

/// Scratch matrices, reused from one product to the next: the runtime's
/// workspace, outside the arena.
thread_local std::vector<float> wideA, wideB, wideC;

/// The rows x cols matrix at `matrix` (row stride `ld`) widened into `out`,
/// rows packed.
void widen(const void *matrix, int64_t rows, int64_t cols, int64_t ld, std::vector<float> &out) {
  out.resize(static_cast<size_t>(rows * cols));
  const auto *bits = static_cast<const uint16_t *>(matrix);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      out[i * cols + j] = bf16ToFloat(bits[i * ld + j]);
}

/// One product: A is m x k after op, B k x n after op.
void gemmBF16(const GemmShape &g, float alpha, const void *a, const void *b, float beta, void *c) {
  if (g.empty())
    return;
  int64_t aRows = g.transA ? g.k : g.m, aCols = g.transA ? g.m : g.k;
  int64_t bRows = g.transB ? g.n : g.k, bCols = g.transB ? g.k : g.n;
  widen(a, aRows, aCols, g.lda, wideA);
  widen(b, bRows, bCols, g.ldb, wideB);
  wideC.resize(static_cast<size_t>(g.m * g.n));
  // C is not read when beta is 0 (it may hold NaNs), as in BLAS.
  if (beta != 0.0f)
    widen(c, g.m, g.n, g.ldc, wideC);
  fsdprt_sgemm(g.transA, g.transB, g.m, g.n, g.k, alpha, wideA.data(), aCols, wideB.data(), bCols,
               beta, wideC.data(), g.n);
  auto *out = static_cast<uint16_t *>(c);
  for (int64_t i = 0; i < g.m; ++i)
    for (int64_t j = 0; j < g.n; ++j)
      out[i * g.ldc + j] = floatToBF16(wideC[i * g.n + j]);
}

} // namespace

extern "C" void fsdprt_gemm_bf16(int32_t trans_a, int32_t trans_b, int64_t m, int64_t n,
                                 int64_t k, float alpha, const void *a, int64_t lda,
                                 const void *b, int64_t ldb, float beta, void *c, int64_t ldc) {
  GemmShape gemm{trans_a, trans_b, m, n, k, lda, ldb, ldc};
  // cuBLAS's limit, so that a product the CPU takes runs on the GPU too.
  checkGemm("fsdprt_gemm_bf16", gemm, INT_MAX);
  gemmBF16(gemm, alpha, a, b, beta, c);
}

extern "C" void fsdprt_gemm_bf16_batched(int32_t trans_a, int32_t trans_b, int64_t batch, int64_t m,
                                         int64_t n, int64_t k, float alpha, const void *a,
                                         int64_t lda, int64_t stride_a, const void *b, int64_t ldb,
                                         int64_t stride_b, float beta, void *c, int64_t ldc,
                                         int64_t stride_c) {
  GemmShape gemm{trans_a, trans_b, m, n, k, lda, ldb, ldc};
  checkGemmBatch("fsdprt_gemm_bf16_batched", gemm, batch, stride_a, stride_b, stride_c, INT_MAX);
  for (int64_t i = 0; i < batch; ++i)
    gemmBF16(gemm, alpha, static_cast<const uint16_t *>(a) + i * stride_a,
             static_cast<const uint16_t *>(b) + i * stride_b, beta,
             static_cast<uint16_t *>(c) + i * stride_c);
}
