//===- Sgemm.cpp - fsdprt_sgemm: dense products for generated code --------===//
//
// Generated code calls back into the runtime only for matrix products, which
// go to BLAS. Arguments are checked here, so that a code generation bug shows
// up as a clear error instead of BLAS's xerbla message and a garbage result.
//
//===----------------------------------------------------------------------===//

#include "fsdprt/fsdprt.h"

#include "Error.h"

#include <cblas.h>

#include <algorithm>
#include <limits>

using namespace fsdprt;

/// Narrows an argument to BLAS's integer type, or fails naming it.
static blasint toBlasInt(int64_t value, const char *name) {
  if (value < 0 || value > static_cast<int64_t>(std::numeric_limits<blasint>::max()))
    fatal(std::string("fsdprt_sgemm: ") + name + " = " + std::to_string(value) +
          " is negative or too large for BLAS");
  return static_cast<blasint>(value);
}

static void checkStride(int64_t stride, int64_t columns, const char *name) {
  if (stride < std::max<int64_t>(1, columns))
    fatal(std::string("fsdprt_sgemm: ") + name + " = " + std::to_string(stride) +
          " is smaller than the row length " + std::to_string(columns));
}

extern "C" void fsdprt_sgemm(int32_t trans_a, int32_t trans_b, int64_t m, int64_t n, int64_t k,
                             float alpha, const float *a, int64_t lda, const float *b,
                             int64_t ldb, float beta, float *c, int64_t ldc) {
  blasint rows = toBlasInt(m, "m");
  blasint columns = toBlasInt(n, "n");
  blasint inner = toBlasInt(k, "k");
  // Row-major storage: A is stored M x K (or K x M when transposed), B is
  // K x N (or N x K), C is M x N.
  checkStride(lda, trans_a ? m : k, "lda");
  checkStride(ldb, trans_b ? k : n, "ldb");
  checkStride(ldc, n, "ldc");
  if (m == 0 || n == 0)
    return;
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, rows, columns, inner, alpha, a,
              toBlasInt(lda, "lda"), b, toBlasInt(ldb, "ldb"), beta, c, toBlasInt(ldc, "ldc"));
}

extern "C" void fsdprt_sgemm_batched(int32_t trans_a, int32_t trans_b, int64_t batch,
                                     int64_t m, int64_t n, int64_t k, float alpha,
                                     const float *a, int64_t lda, int64_t stride_a,
                                     const float *b, int64_t ldb, int64_t stride_b,
                                     float beta, float *c, int64_t ldc, int64_t stride_c) {
  toBlasInt(batch, "batch");
  // Each matrix of a batch lies in its own slice of the buffers.
  checkStride(stride_a, (trans_a ? k : m) * lda, "stride_a");
  checkStride(stride_b, (trans_b ? n : k) * ldb, "stride_b");
  checkStride(stride_c, m * ldc, "stride_c");
  for (int64_t i = 0; i < batch; ++i)
    fsdprt_sgemm(trans_a, trans_b, m, n, k, alpha, a + i * stride_a, lda, b + i * stride_b,
                 ldb, beta, c + i * stride_c, ldc);
}
