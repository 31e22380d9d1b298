//===- Sgemm.cpp - fsdprt_sgemm(_batched) on the CPU ----------------------===//
//
// The CPU backend's f32 products, with the arguments checked first
// (GemmArguments.h). The issue that brought bf16 asked for the faster of
// oneDNN's and OpenBLAS's f32 GEMM: oneDNN's brgemm kernels (AVX-512 and
// newer) beat Debian's OpenBLAS 0.3.21 on the models' shapes (bench/README.md,
// "GEMMs"), so products run there where oneDNN has one for them, and on
// OpenBLAS otherwise (older CPUs, k == 0, which oneDNN does not take). Both
// accumulate in f32; only the order of the sums differs.
//
//===----------------------------------------------------------------------===//

#include "cpu/Sgemm.h"

#include "fsdprt/fsdprt.h"

#include "abi/GemmArguments.h"
#include "trace/StepTimeline.h"

#include <cblas.h>

#include <limits>

using namespace fsdprt;

static constexpr int64_t kBlasLimit = std::numeric_limits<blasint>::max();

namespace fsdprt {

void openblasSgemm(const GemmBatch &product, float alpha, const float *a, const float *b,
                   float beta, float *c) {
  const GemmShape &g = product.gemm;
  if (g.empty())
    return;
  for (int64_t i = 0; i < product.batch; ++i)
    cblas_sgemm(
        CblasRowMajor, g.transA ? CblasTrans : CblasNoTrans, g.transB ? CblasTrans : CblasNoTrans,
        static_cast<blasint>(g.m), static_cast<blasint>(g.n), static_cast<blasint>(g.k), alpha,
        a + i * product.strideA, static_cast<blasint>(g.lda), b + i * product.strideB,
        static_cast<blasint>(g.ldb), beta, c + i * product.strideC, static_cast<blasint>(g.ldc));
}

std::string f32GemmLine() {
  if (std::optional<std::string> kernel = onednnKernel(MatmulType::F32))
    return "f32 gemm: " + *kernel;
  return std::string("f32 gemm: OpenBLAS sgemm (") + onednnVersionAndIsa() +
         ": no brgemm f32 matmul on this CPU)";
}

} // namespace fsdprt

namespace {

void sgemm(const GemmBatch &product, float alpha, const float *a, const float *b, float beta,
           float *c) {
  if (product.gemm.empty() || product.batch == 0)
    return;
  if (product.gemm.k > 0 && onednnGemm(MatmulType::F32, product, alpha, a, b, beta, c))
    return;
  openblasSgemm(product, alpha, a, b, beta, c);
}

} // namespace

extern "C" void fsdprt_sgemm(int32_t trans_a, int32_t trans_b, int64_t m, int64_t n, int64_t k,
                             float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                             float beta, float *c, int64_t ldc) {
  ProductSpan span("sgemm", 2.0 * static_cast<double>(m) * static_cast<double>(n) *
                               static_cast<double>(k));
  GemmShape gemm{trans_a, trans_b, m, n, k, lda, ldb, ldc};
  checkGemm("fsdprt_sgemm", gemm, kBlasLimit);
  sgemm(GemmBatch{gemm, 1, 0, 0, 0}, alpha, a, b, beta, c);
}

extern "C" void fsdprt_sgemm_batched(int32_t trans_a, int32_t trans_b, int64_t batch, int64_t m,
                                     int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                                     int64_t stride_a, const float *b, int64_t ldb,
                                     int64_t stride_b, float beta, float *c, int64_t ldc,
                                     int64_t stride_c) {
  ProductSpan span("sgemm_batched", 2.0 * static_cast<double>(batch) * static_cast<double>(m) *
                                       static_cast<double>(n) * static_cast<double>(k));
  GemmShape gemm{trans_a, trans_b, m, n, k, lda, ldb, ldc};
  checkGemmBatch("fsdprt_sgemm", gemm, batch, stride_a, stride_b, stride_c, kBlasLimit);
  checkGemm("fsdprt_sgemm", gemm, kBlasLimit);
  sgemm(GemmBatch{gemm, batch, stride_a, stride_b, stride_c}, alpha, a, b, beta, c);
}

extern "C" void fsdprt_sgemm_bias(int32_t trans_a, int32_t trans_b, int64_t m, int64_t n, int64_t k,
                                  float alpha, const float *a, int64_t lda, const float *b,
                                  int64_t ldb, float beta, float *c, int64_t ldc,
                                  const float *bias) {
  ProductSpan span("sgemm_bias", 2.0 * static_cast<double>(m) * static_cast<double>(n) *
                                    static_cast<double>(k));
  GemmShape gemm{trans_a, trans_b, m, n, k, lda, ldb, ldc};
  checkGemm("fsdprt_sgemm_bias", gemm, kBlasLimit);
  checkBias("fsdprt_sgemm_bias", gemm, bias);
  sgemm(GemmBatch{gemm, 1, 0, 0, 0}, alpha, a, b, beta, c);
  // The f32 sums are f32 already: adding the bias to the stored C is what
  // cuBLASLt's epilogue does before it stores them.
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      c[i * ldc + j] += bias[j];
}
