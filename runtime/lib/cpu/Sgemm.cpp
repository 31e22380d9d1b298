//===- Sgemm.cpp - fsdprt_sgemm(_batched) on the CPU ----------------------===//
//
// The CPU backend's f32 products, with the arguments checked first
// (GemmArguments.h), by the rule of Sgemm.h. oneDNN's brgemm kernels
// (AVX-512 and newer) beat Debian's OpenBLAS 0.3.21 on the models' shapes
// (bench/README.md, "GEMMs"), so products run there where oneDNN has one for
// them. The rest (older CPUs; rows longer than the matrix's and batches with
// gaps, which brgemm does not take; k == 0) go to OpenBLAS, whose kernels for
// the CPU beat oneDNN's older gemm:jit; but where OpenBLAS runs a generic core
// on a CPU with AVX2 (its SSE3 kernels, a quarter of the rate) oneDNN's
// gemm:jit for the CPU takes them. All accumulate in f32; only the
// order of the sums differs, and a product of a given shape takes the same
// path at every call.
//
//===----------------------------------------------------------------------===//

#include "cpu/Sgemm.h"

#include "fsdprt/fsdprt.h"

#include "abi/GemmArguments.h"
#include "cpu/OpenblasCore.h"
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

namespace {

/// Whether the products brgemm does not take go to oneDNN's gemm:jit rather
/// than to OpenBLAS: where OpenBLAS runs a generic core and oneDNN has a JIT
/// kernel for this CPU.
bool routeAroundOpenblas() {
  static const bool route =
      openblasCoreIsGeneric() && onednnKernel(OnednnKernels::F32Jit).has_value();
  return route;
}

/// What the products brgemm does not take run on, for the version line.
std::string otherProductsKernel() {
  std::string core = openblas_get_corename();
  if (routeAroundOpenblas())
    return *onednnKernel(OnednnKernels::F32Jit) + ", OpenBLAS's core " + core +
           " being generic here";
  return "OpenBLAS sgemm, core " + core;
}

} // namespace

void f32Gemm(const GemmBatch &product, float alpha, const float *a, const float *b, float beta,
             float *c) {
  if (product.gemm.empty() || product.batch == 0)
    return;
  if (product.gemm.k > 0) {
    if (onednnGemm(OnednnKernels::F32Brgemm, product, alpha, a, b, beta, c))
      return;
    if (routeAroundOpenblas() && onednnGemm(OnednnKernels::F32Jit, product, alpha, a, b, beta, c))
      return;
  }
  openblasSgemm(product, alpha, a, b, beta, c);
}

bool f32GemmsRunOnOnednn() {
  static const bool onOnednn =
      onednnKernel(OnednnKernels::F32Brgemm).has_value() || routeAroundOpenblas();
  return onOnednn;
}

std::string f32GemmLine() {
  if (std::optional<std::string> brgemm = onednnKernel(OnednnKernels::F32Brgemm))
    return "f32 gemm: " + *brgemm + "; padded rows, gapped batches: " + otherProductsKernel();
  return "f32 gemm: " + otherProductsKernel() + "; no brgemm f32 matmul in " +
         onednnVersionAndIsa();
}

} // namespace fsdprt


extern "C" void fsdprt_sgemm(int32_t trans_a, int32_t trans_b, int64_t m, int64_t n, int64_t k,
                             float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                             float beta, float *c, int64_t ldc) {
  ProductSpan span("sgemm", 2.0 * static_cast<double>(m) * static_cast<double>(n) *
                               static_cast<double>(k));
  GemmShape gemm{trans_a, trans_b, m, n, k, lda, ldb, ldc};
  checkGemm("fsdprt_sgemm", gemm, kBlasLimit);
  f32Gemm(GemmBatch{gemm, 1, 0, 0, 0}, alpha, a, b, beta, c);
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
  f32Gemm(GemmBatch{gemm, batch, stride_a, stride_b, stride_c}, alpha, a, b, beta, c);
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
  f32Gemm(GemmBatch{gemm, 1, 0, 0, 0}, alpha, a, b, beta, c);
  // The f32 sums are f32 already: adding the bias to the stored C is what
  // cuBLASLt's epilogue does before it stores them.
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      c[i * ldc + j] += bias[j];
}
