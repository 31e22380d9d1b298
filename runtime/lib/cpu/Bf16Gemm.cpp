//===- Bf16Gemm.cpp - fsdprt_gemm_bf16(_batched) on the CPU ---------------===//
//
// What cuBLAS's bf16 GEMM with fp32 compute does: products summed in fp32,
// alpha * sum + beta * C rounded to bf16, to nearest even, when stored
// (docs/MixedPrecision.md).
//
// oneDNN's bf16 matmul does it on the CPU's bf16 instructions (AMX,
// AVX512-BF16) where oneDNN has them for this CPU (OnednnMatmul.h). Without
// them oneDNN emulates bf16 products at a quarter of its f32 rate (63
// against 260 GFLOP/s on an AVX-512 Xeon without BF16, bench/README.md), so
// there, and for k == 0 (which oneDNN does not take), A and B are widened to
// f32 and multiplied as f32 products (Sgemm.h): a product of two bf16 values
// is exact in f32, so this is the same arithmetic; only the order of the sums
// differs, which f32 accumulation leaves free.
//
//===----------------------------------------------------------------------===//

#include "cpu/Bf16Gemm.h"

#include "fsdprt/fsdprt.h"

#include "abi/GemmArguments.h"
#include "cpu/Bf16Rows.h"
#include "cpu/Sgemm.h"
#include "trace/StepTimeline.h"

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <memory>

using namespace fsdprt;

namespace {

/// A scratch matrix, reused from one product to the next: the runtime's
/// workspace, outside the arena. Growing it leaves the new elements
/// uninitialised: a std::vector would zero them, a write the conversion
/// overwrites at once, in a step whose products change shape each call.
class Scratch {
public:
  float *reserve(int64_t elements) {
    if (static_cast<size_t>(elements) > capacity) {
      data.reset(new float[static_cast<size_t>(elements)]);
      capacity = static_cast<size_t>(elements);
    }
    return data.get();
  }

private:
  std::unique_ptr<float[]> data;
  size_t capacity = 0;
};

thread_local Scratch wideA, wideB, wideC;

/// The threads that convert a widened product's matrices: the OpenMP
/// threads of oneDNN where the f32 product runs there (as many as
/// OpenBLAS's, OnednnMatmul.cpp), one where it runs on OpenBLAS, whose own
/// threads spin a while after each call and would take the cores from the
/// conversions' (measured: 2 threads slower than 1 there, bench/README.md).
int conversionThreads() { return f32GemmsRunOnOnednn() ? openblas_get_num_threads() : 1; }

/// The `batch` rows x cols matrices at `matrix` (row stride `ld`, matrix
/// stride `stride`) widened into `out`, packed, on `threads` threads.
float *widen(const void *matrix, int64_t batch, int64_t stride, int64_t rows, int64_t cols,
             int64_t ld, int threads, Scratch &scratch) {
  float *out = scratch.reserve(batch * rows * cols);
  for (int64_t s = 0; s < batch; ++s)
    widenBf16Matrix(static_cast<const uint16_t *>(matrix) + s * stride, ld, out + s * rows * cols,
                    cols, rows, cols, threads);
  return out;
}

void gemmBF16(const GemmBatch &product, float alpha, const void *a, const void *b, float beta,
              void *c) {
  if (product.gemm.empty() || product.batch == 0)
    return;
  if (product.gemm.k > 0 && onednnGemm(OnednnKernels::Bf16Native, product, alpha, a, b, beta, c))
    return;
  widenedGemmBf16(product, alpha, a, b, beta, c);
}

} // namespace

namespace fsdprt {

void widenedGemmBf16(const GemmBatch &product, float alpha, const void *a, const void *b,
                     float beta, void *c) {
  const GemmShape &g = product.gemm;
  if (g.empty() || product.batch == 0)
    return;
  // Stored shapes: A is m x k (k x m transposed), B is k x n (n x k).
  int64_t aRows = g.transA ? g.k : g.m, aCols = g.transA ? g.m : g.k;
  int64_t bRows = g.transB ? g.n : g.k, bCols = g.transB ? g.k : g.n;
  int threads = conversionThreads();
  float *wa = widen(a, product.batch, product.strideA, aRows, aCols, g.lda, threads, wideA);
  float *wb = widen(b, product.batch, product.strideB, bRows, bCols, g.ldb, threads, wideB);
  // C is not read when beta is 0 (it may hold NaNs), as in BLAS.
  float *wc = beta != 0.0f
                  ? widen(c, product.batch, product.strideC, g.m, g.n, g.ldc, threads, wideC)
                  : wideC.reserve(product.batch * g.m * g.n);
  // Packed rows and batches (tight, so oneDNN's brgemm takes them); a row of
  // k = 0 elements still has a stride of 1 for BLAS.
  GemmShape packed{
      g.transA, g.transB, g.m, g.n, g.k, std::max<int64_t>(1, aCols), std::max<int64_t>(1, bCols),
      g.n};
  f32Gemm(GemmBatch{packed, product.batch, aRows * aCols, bRows * bCols, g.m * g.n}, alpha, wa, wb,
          beta, wc);
  for (int64_t s = 0; s < product.batch; ++s)
    roundBf16Matrix(wc + s * g.m * g.n, g.n, static_cast<uint16_t *>(c) + s * product.strideC,
                    g.ldc, g.m, g.n, threads);
}

std::string bf16GemmLine() {
  if (std::optional<std::string> kernel = onednnKernel(OnednnKernels::Bf16Native))
    return "bf16 gemm: " + *kernel + ": bf16 instructions";
  return "bf16 gemm: widened to f32 for the f32 products' kernels, C rounded once (" +
         onednnVersionAndIsa() + ": no bf16 instructions)";
}

} // namespace fsdprt

extern "C" void fsdprt_gemm_bf16(int32_t trans_a, int32_t trans_b, int64_t m, int64_t n, int64_t k,
                                 float alpha, const void *a, int64_t lda, const void *b,
                                 int64_t ldb, float beta, void *c, int64_t ldc) {
  ProductSpan span("gemm_bf16",
                   2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k));
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
  ProductSpan span("gemm_bf16_batched", 2.0 * static_cast<double>(batch) * static_cast<double>(m) *
                                            static_cast<double>(n) * static_cast<double>(k));
  GemmShape gemm{trans_a, trans_b, m, n, k, lda, ldb, ldc};
  // As on CUDA: the strides of the batch, then the product's own arguments.
  const char *what = "fsdprt_gemm_bf16_batched";
  checkGemmBatch(what, gemm, batch, stride_a, stride_b, stride_c, INT_MAX);
  checkGemm(what, gemm, INT_MAX);
  gemmBF16(GemmBatch{gemm, batch, stride_a, stride_b, stride_c}, alpha, a, b, beta, c);
}
