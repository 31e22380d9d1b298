//===- GemmArguments.cpp - Checks of a matrix product's arguments ---------===//

#include "abi/GemmArguments.h"

#include "abi/Error.h"

#include <algorithm>
#include <string>

namespace fsdprt {

static void checkSize(const char *what, int64_t value, const char *name, int64_t limit) {
  if (value < 0 || value > limit)
    fatal(std::string(what) + ": " + name + " = " + std::to_string(value) +
          " is negative or too large for BLAS");
}

static void checkStride(const char *what, int64_t stride, int64_t columns, const char *name) {
  if (stride < std::max<int64_t>(1, columns))
    fatal(std::string(what) + ": " + name + " = " + std::to_string(stride) +
          " is smaller than the row length " + std::to_string(columns));
}

void checkGemm(const char *what, const GemmShape &gemm, int64_t limit) {
  checkSize(what, gemm.m, "m", limit);
  checkSize(what, gemm.n, "n", limit);
  checkSize(what, gemm.k, "k", limit);
  // Row-major storage: A is stored M x K (or K x M when transposed), B is
  // K x N (or N x K), C is M x N.
  checkStride(what, gemm.lda, gemm.transA ? gemm.m : gemm.k, "lda");
  checkStride(what, gemm.ldb, gemm.transB ? gemm.k : gemm.n, "ldb");
  checkStride(what, gemm.ldc, gemm.n, "ldc");
  checkSize(what, gemm.lda, "lda", limit);
  checkSize(what, gemm.ldb, "ldb", limit);
  checkSize(what, gemm.ldc, "ldc", limit);
}

void checkGemmBatch(const char *what, const GemmShape &gemm, int64_t batch, int64_t strideA,
                    int64_t strideB, int64_t strideC, int64_t limit) {
  checkSize(what, batch, "batch", limit);
  checkStride(what, strideA, (gemm.transA ? gemm.k : gemm.m) * gemm.lda, "stride_a");
  checkStride(what, strideB, (gemm.transB ? gemm.n : gemm.k) * gemm.ldb, "stride_b");
  checkStride(what, strideC, gemm.m * gemm.ldc, "stride_c");
}

void checkBias(const char *what, const GemmShape &gemm, const void *bias) {
  if (gemm.empty())
    return;
  if (!bias)
    fatal(std::string(what) + ": bias is NULL, but the product has n = " +
          std::to_string(gemm.n) + " columns to add it to");
  // cuBLASLt, which adds the bias on a GPU, does not define a product
  // without a sum; the compiler never emits one.
  if (gemm.k == 0)
    fatal(std::string(what) + ": k = 0: a product with a bias needs a sum (k > 0)");
}

} // namespace fsdprt
