//===- Bf16Gemm.cpp - fsdprt_gemm_bf16(_batched) on the CPU ---------------===//
//
// What cuBLAS's bf16 GEMM with fp32 compute does: products summed in fp32,
// alpha * sum + beta * C rounded to bf16, to nearest even, when stored
// (docs/MixedPrecision.md).
//
// oneDNN's bf16 matmul does it on the CPU's matrix unit (AMX, AVX512-BF16)
// where oneDNN has one for this CPU (OnednnMatmul.h). Elsewhere, and for
// k == 0 (which oneDNN does not take), A and B are widened to fp32 and
// multiplied by OpenBLAS sgemm (Sgemm.h): a product of two bf16 values is
// exact in fp32, so this is the same arithmetic; only the order of the sums
// differs, which fp32 accumulation leaves free.
//
//===----------------------------------------------------------------------===//

#include "cpu/Bf16Gemm.h"

#include "fsdprt/fsdprt.h"

#include "abi/DType.h"
#include "abi/GemmArguments.h"
#include "cpu/Sgemm.h"
#include "trace/StepTimeline.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <vector>

using namespace fsdprt;

namespace {

/// Scratch matrices, reused from one product to the next: the runtime's
/// workspace, outside the arena.
thread_local std::vector<float> wideA, wideB, wideC;

/// Set by the first product, for the trainer's report (HostDevice.cpp).
std::atomic<bool> productsRan{false};

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
void widenedProduct(const GemmShape &g, float alpha, const void *a, const void *b, float beta,
                    void *c) {
  int64_t aRows = g.transA ? g.k : g.m, aCols = g.transA ? g.m : g.k;
  int64_t bRows = g.transB ? g.n : g.k, bCols = g.transB ? g.k : g.n;
  widen(a, aRows, aCols, g.lda, wideA);
  widen(b, bRows, bCols, g.ldb, wideB);
  wideC.resize(static_cast<size_t>(g.m * g.n));
  // C is not read when beta is 0 (it may hold NaNs), as in BLAS.
  if (beta != 0.0f)
    widen(c, g.m, g.n, g.ldc, wideC);
  // Packed rows; a row of k = 0 elements still has a stride of 1 for BLAS.
  GemmShape packed{
      g.transA, g.transB, g.m, g.n, g.k, std::max<int64_t>(1, aCols), std::max<int64_t>(1, bCols),
      g.n};
  openblasSgemm(GemmBatch{packed, 1, 0, 0, 0}, alpha, wideA.data(), wideB.data(), beta,
                wideC.data());
  auto *out = static_cast<uint16_t *>(c);
  for (int64_t i = 0; i < g.m; ++i)
    for (int64_t j = 0; j < g.n; ++j)
      out[i * g.ldc + j] = floatToBF16(wideC[i * g.n + j]);
}

void gemmBF16(const GemmBatch &product, float alpha, const void *a, const void *b, float beta,
              void *c) {
  if (product.gemm.empty() || product.batch == 0)
    return;
  productsRan.store(true, std::memory_order_relaxed);
  if (product.gemm.k > 0 && onednnGemm(MatmulType::Bf16, product, alpha, a, b, beta, c))
    return;
  widenedGemmBf16(product, alpha, a, b, beta, c);
}

} // namespace

namespace fsdprt {

void widenedGemmBf16(const GemmBatch &product, float alpha, const void *a, const void *b,
                     float beta, void *c) {
  if (product.gemm.empty())
    return;
  for (int64_t i = 0; i < product.batch; ++i)
    widenedProduct(product.gemm, alpha, static_cast<const uint16_t *>(a) + i * product.strideA,
                   static_cast<const uint16_t *>(b) + i * product.strideB, beta,
                   static_cast<uint16_t *>(c) + i * product.strideC);
}

std::string bf16GemmLine() {
  if (std::optional<std::string> kernel = onednnKernel(MatmulType::Bf16))
    return "bf16 gemm: " + *kernel;
  return "bf16 gemm: f32 widen + OpenBLAS sgemm (" + onednnVersionAndIsa() +
         ": no bf16 matmul on this CPU)";
}

bool bf16GemmsRan() { return productsRan.load(std::memory_order_relaxed); }

} // namespace fsdprt

extern "C" void fsdprt_gemm_bf16(int32_t trans_a, int32_t trans_b, int64_t m, int64_t n, int64_t k,
                                 float alpha, const void *a, int64_t lda, const void *b,
                                 int64_t ldb, float beta, void *c, int64_t ldc) {
  ProductSpan span("gemm_bf16", 2.0 * static_cast<double>(m) * static_cast<double>(n) *
                                   static_cast<double>(k));
  GemmShape gemm{trans_a, trans_b, m, n, k, lda, ldb, ldc};
  // cuBLAS's limit, so that a product the CPU takes runs on the GPU too.
  checkGemm("fsdprt_gemm_bf16", gemm, INT_MAX);
  gemmBF16(GemmBatch{gemm, 1, 0, 0, 0}, alpha, a, b, beta, c);
}

extern "C" void fsdprt_gemm_bf16_batched(int32_t trans_a, int32_t trans_b, int64_t batch, int64_t m,
                                         int64_t n, int64_t k, float alpha, const void *a,
                                         int64_t lda, int64_t stride_a, const void *b, int64_t ldb,
                                         int64_t stride_b, float beta, void *c, int64_t ldc,
                                         int64_t stride_c) {
  ProductSpan span("gemm_bf16_batched", 2.0 * static_cast<double>(batch) *
                                           static_cast<double>(m) * static_cast<double>(n) *
                                           static_cast<double>(k));
  GemmShape gemm{trans_a, trans_b, m, n, k, lda, ldb, ldc};
  // As on CUDA: the strides of the batch, then the product's own arguments.
  const char *what = "fsdprt_gemm_bf16_batched";
  checkGemmBatch(what, gemm, batch, stride_a, stride_b, stride_c, INT_MAX);
  checkGemm(what, gemm, INT_MAX);
  gemmBF16(GemmBatch{gemm, batch, stride_a, stride_b, stride_c}, alpha, a, b, beta, c);
}
