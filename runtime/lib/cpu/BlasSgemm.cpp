//===- BlasSgemm.cpp - fsdprt_sgemm on OpenBLAS ---------------------------===//
//
// The CPU backend's dense products: row-major cblas_sgemm, with the
// arguments checked first (GemmArguments.h).
//
//===----------------------------------------------------------------------===//

#include "fsdprt/fsdprt.h"

#include "GemmArguments.h"

#include <cblas.h>

#include <limits>

using namespace fsdprt;

static constexpr int64_t kBlasLimit = std::numeric_limits<blasint>::max();

extern "C" void fsdprt_sgemm(int32_t trans_a, int32_t trans_b, int64_t m, int64_t n, int64_t k,
                             float alpha, const float *a, int64_t lda, const float *b,
                             int64_t ldb, float beta, float *c, int64_t ldc) {
  GemmShape gemm{trans_a, trans_b, m, n, k, lda, ldb, ldc};
  checkGemm("fsdprt_sgemm", gemm, kBlasLimit);
  if (gemm.empty())
    return;
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, static_cast<blasint>(m),
              static_cast<blasint>(n), static_cast<blasint>(k), alpha, a,
              static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta, c,
              static_cast<blasint>(ldc));
}

extern "C" void fsdprt_sgemm_batched(int32_t trans_a, int32_t trans_b, int64_t batch,
                                     int64_t m, int64_t n, int64_t k, float alpha,
                                     const float *a, int64_t lda, int64_t stride_a,
                                     const float *b, int64_t ldb, int64_t stride_b,
                                     float beta, float *c, int64_t ldc, int64_t stride_c) {
  checkGemmBatch("fsdprt_sgemm", GemmShape{trans_a, trans_b, m, n, k, lda, ldb, ldc}, batch,
                 stride_a, stride_b, stride_c, kBlasLimit);
  for (int64_t i = 0; i < batch; ++i)
    fsdprt_sgemm(trans_a, trans_b, m, n, k, alpha, a + i * stride_a, lda, b + i * stride_b,
                 ldb, beta, c + i * stride_c, ldc);
}
