//===- CublasGemm.cpp - The step's matrix products on cuBLAS --------------===//
//
// fsdprt_sgemm(_batched) and fsdprt_gemm_bf16(_batched) (fsdprt.h) on the
// compute stream, with the arguments checked first (GemmArguments.h).
// fsdprt.h's matrices are row-major and cuBLAS's column-major: a row-major
// M x N matrix C is the column-major N x M matrix C^T, and
// C^T = op(B)^T op(A)^T, so every call passes B before A, and N before M,
// with the same transposition flags and strides.
//
//===----------------------------------------------------------------------===//

#include "CudaCheck.h"
#include "CudaDevice.h"
#include "GemmArguments.h"
#include "fsdprt/fsdprt.h"

#include <climits>

namespace fsdprt {

static cublasHandle_t handle = nullptr;

void openCublas(cudaStream_t compute) {
  FSDPRT_CUBLAS_CHECK(cublasCreate(&handle));
  FSDPRT_CUBLAS_CHECK(cublasSetStream(handle, compute));
  // fp32 products in fp32 (no TF32 tensor cores), and bf16 products that
  // keep their fp32 sums all the way, whatever cuBLAS's defaults become.
  FSDPRT_CUBLAS_CHECK(cublasSetMathMode(
      handle, static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH |
                                        CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
}

void closeCublas() {
  FSDPRT_CUBLAS_CHECK(cublasDestroy(handle));
  handle = nullptr;
}

/// The handle, once the arguments of the product `what` are checked.
static cublasHandle_t checkedHandle(const char *what, const GemmShape &gemm) {
  checkGemm(what, gemm, INT_MAX);
  openedDevice(what);
  return handle;
}

static cublasOperation_t operation(int32_t trans) { return trans ? CUBLAS_OP_T : CUBLAS_OP_N; }

} // namespace fsdprt

using namespace fsdprt;

extern "C" void fsdprt_sgemm(int32_t trans_a, int32_t trans_b, int64_t m, int64_t n, int64_t k,
                             float alpha, const float *a, int64_t lda, const float *b,
                             int64_t ldb, float beta, float *c, int64_t ldc) {
  GemmShape gemm{trans_a, trans_b, m, n, k, lda, ldb, ldc};
  cublasHandle_t cublas = checkedHandle("fsdprt_sgemm", gemm);
  if (gemm.empty())
    return;
  FSDPRT_CUBLAS_CHECK(cublasSgemm(cublas, operation(trans_b), operation(trans_a), int(n), int(m),
                                  int(k), &alpha, b, int(ldb), a, int(lda), &beta, c, int(ldc)));
}

extern "C" void fsdprt_sgemm_batched(int32_t trans_a, int32_t trans_b, int64_t batch,
                                     int64_t m, int64_t n, int64_t k, float alpha,
                                     const float *a, int64_t lda, int64_t stride_a,
                                     const float *b, int64_t ldb, int64_t stride_b,
                                     float beta, float *c, int64_t ldc, int64_t stride_c) {
  const char *what = "fsdprt_sgemm";
  GemmShape gemm{trans_a, trans_b, m, n, k, lda, ldb, ldc};
  checkGemmBatch(what, gemm, batch, stride_a, stride_b, stride_c, INT_MAX);
  cublasHandle_t cublas = checkedHandle(what, gemm);
  if (gemm.empty() || batch == 0)
    return;
  FSDPRT_CUBLAS_CHECK(cublasSgemmStridedBatched(
      cublas, operation(trans_b), operation(trans_a), int(n), int(m), int(k), &alpha, b,
      int(ldb), stride_b, a, int(lda), stride_a, &beta, c, int(ldc), stride_c, int(batch)));
}

extern "C" void fsdprt_gemm_bf16(int32_t trans_a, int32_t trans_b, int64_t m, int64_t n,
                                 int64_t k, float alpha, const void *a, int64_t lda,
                                 const void *b, int64_t ldb, float beta, void *c, int64_t ldc) {
  GemmShape gemm{trans_a, trans_b, m, n, k, lda, ldb, ldc};
  cublasHandle_t cublas = checkedHandle("fsdprt_gemm_bf16", gemm);
  if (gemm.empty())
    return;
  FSDPRT_CUBLAS_CHECK(cublasGemmEx(cublas, operation(trans_b), operation(trans_a), int(n), int(m),
                                   int(k), &alpha, b, CUDA_R_16BF, int(ldb), a, CUDA_R_16BF,
                                   int(lda), &beta, c, CUDA_R_16BF, int(ldc), CUBLAS_COMPUTE_32F,
                                   CUBLAS_GEMM_DEFAULT));
}

extern "C" void fsdprt_gemm_bf16_batched(int32_t trans_a, int32_t trans_b, int64_t batch, int64_t m,
                                         int64_t n, int64_t k, float alpha, const void *a,
                                         int64_t lda, int64_t stride_a, const void *b, int64_t ldb,
                                         int64_t stride_b, float beta, void *c, int64_t ldc,
                                         int64_t stride_c) {
  const char *what = "fsdprt_gemm_bf16_batched";
  GemmShape gemm{trans_a, trans_b, m, n, k, lda, ldb, ldc};
  checkGemmBatch(what, gemm, batch, stride_a, stride_b, stride_c, INT_MAX);
  cublasHandle_t cublas = checkedHandle(what, gemm);
  if (gemm.empty() || batch == 0)
    return;
  FSDPRT_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      cublas, operation(trans_b), operation(trans_a), int(n), int(m), int(k), &alpha, b,
      CUDA_R_16BF, int(ldb), stride_b, a, CUDA_R_16BF, int(lda), stride_a, &beta, c, CUDA_R_16BF,
      int(ldc), stride_c, int(batch), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}
