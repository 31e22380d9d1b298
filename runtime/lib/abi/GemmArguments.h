//===- GemmArguments.h - Checks of a matrix product's arguments -*- C++ -*-===//
//
// fsdprt_sgemm, fsdprt_sgemm_batched, fsdprt_gemm_bf16 and their bias
// epilogue forms (fsdprt.h) go to
// OpenBLAS on the CPU backend and to cuBLAS on the CUDA backend. Their
// arguments are checked here first, the same way for both, so that a code
// generation bug shows up as a clear error instead of a BLAS's own message
// (or a garbage result).
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_ABI_GEMMARGUMENTS_H
#define FSDPRT_ABI_GEMMARGUMENTS_H

#include <cstdint>

namespace fsdprt {

/// One row-major product C = alpha * op(A) * op(B) + beta * C: A is M x K and
/// B is K x N after op; lda, ldb and ldc are row strides in elements.
struct GemmShape {
  int32_t transA = 0;
  int32_t transB = 0;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;

  /// Whether the product writes nothing (C has no elements).
  bool empty() const { return m == 0 || n == 0; }
};

/// Checks m, n, k and the strides are at most `limit` (the largest integer
/// the BLAS takes) and not negative, and that each stride covers its row.
/// Errors name `what` and the argument.
void checkGemm(const char *what, const GemmShape &gemm, int64_t limit);

/// Checks a batch of `batch` products of `gemm`'s form, whose matrices lie
/// stride_a, stride_b and stride_c elements apart, each in its own slice.
void checkGemmBatch(const char *what, const GemmShape &gemm, int64_t batch, int64_t strideA,
                    int64_t strideB, int64_t strideC, int64_t limit);

/// Checks the bias of a product with an epilogue (fsdprt_sgemm_bias): a
/// product with elements needs one, and a sum (k > 0).
void checkBias(const char *what, const GemmShape &gemm, const void *bias);

} // namespace fsdprt

#endif // FSDPRT_ABI_GEMMARGUMENTS_H
