//===- CublasGemmTest.cpp - Row-major products on column-major cuBLAS -----===//
//
// The fake cuBLAS (FakeCuda.h) multiplies column-major matrices as cuBLAS's
// documentation says; fsdprt.h's products are row-major. These tests check
// the mapping between the two (operands, dimensions and strides swapped)
// against plain row-major products.
//
//===----------------------------------------------------------------------===//

#include "DType.h"
#include "FakeCuda.h"
#include "OpenCudaDevice.h"
#include "TestMatrices.h"
#include "fsdprt/fsdprt.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

using namespace fsdprt;
using test::matrix;
using testing::ElementsAre;
using testing::ExitedWithCode;
using testing::HasSubstr;

namespace {

/// C = alpha op(A) op(B) + beta C, row-major, in the plain way.
void rowMajorProduct(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha,
                     const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                     float *c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float sum = 0;
      for (int64_t p = 0; p < k; ++p)
        sum += (ta ? a[p * lda + i] : a[i * lda + p]) * (tb ? b[j * ldb + p] : b[p * ldb + j]);
      c[i * ldc + j] = alpha * sum + beta * c[i * ldc + j];
    }
}

using CublasGemm = OpenCudaDevice;

TEST_F(CublasGemm, SgemmIsTheRowMajorProduct) {
  const int64_t m = 5, n = 4, k = 3;
  for (int ta = 0; ta <= 1; ++ta)
    for (int tb = 0; tb <= 1; ++tb) {
      int64_t aRows = ta ? k : m, aCols = ta ? m : k;
      int64_t bRows = tb ? n : k, bCols = tb ? k : n;
      int64_t lda = aCols + 2, ldb = bCols + 1, ldc = n + 3;
      std::vector<float> a = matrix(aRows, aCols, lda, 1), b = matrix(bRows, bCols, ldb, 2);
      std::vector<float> c = matrix(m, n, ldc, 3), expected = c;
      rowMajorProduct(ta, tb, m, n, k, 2.0f, a.data(), lda, b.data(), ldb, 0.5f,
                      expected.data(), ldc);
      fsdprt_sgemm(ta, tb, m, n, k, 2.0f, a.data(), lda, b.data(), ldb, 0.5f, c.data(), ldc);
      EXPECT_EQ(c, expected) << "trans_a " << ta << " trans_b " << tb;
    }
  // B first, then A: n and m swapped, and the strides with them.
  std::string cublas = fake_cuda::callsTo("cublasSgemm").at(1);
  EXPECT_THAT(cublas, testing::EndsWith(", T, N, 4, 5, 3, 4, 5, 7)")) << "trans_a 0, trans_b 1";
}

TEST_F(CublasGemm, BatchedIsOneProductPerMatrix) {
  const int64_t batch = 3, m = 4, n = 5, k = 2;
  for (int ta = 0; ta <= 1; ++ta)
    for (int tb = 0; tb <= 1; ++tb) {
      int64_t aRows = ta ? k : m, aCols = ta ? m : k;
      int64_t bRows = tb ? n : k, bCols = tb ? k : n;
      int64_t strideA = aRows * aCols + 1, strideB = bRows * bCols + 2, strideC = m * n + 3;
      std::vector<float> a = matrix(batch * strideA, 1, 1, 1);
      std::vector<float> b = matrix(batch * strideB, 1, 1, 2);
      std::vector<float> c = matrix(batch * strideC, 1, 1, 3), expected = c;
      for (int64_t i = 0; i < batch; ++i)
        rowMajorProduct(ta, tb, m, n, k, 1.0f, a.data() + i * strideA, aCols,
                        b.data() + i * strideB, bCols, 1.0f, expected.data() + i * strideC, n);
      fsdprt_sgemm_batched(ta, tb, batch, m, n, k, 1.0f, a.data(), aCols, strideA, b.data(),
                           bCols, strideB, 1.0f, c.data(), n, strideC);
      EXPECT_EQ(c, expected) << "trans_a " << ta << " trans_b " << tb;
    }
  EXPECT_EQ(fake_cuda::callsTo("cublasSgemmStridedBatched").size(), 4u) << "one call per batch";
}

TEST_F(CublasGemm, Bf16ProductsAccumulateInFp32) {
  const int64_t m = 3, n = 2, k = 4;
  for (int ta = 0; ta <= 1; ++ta)
    for (int tb = 0; tb <= 1; ++tb) {
      std::vector<float> a = matrix(ta ? k : m, ta ? m : k, ta ? m : k, 4);
      std::vector<float> b = matrix(tb ? n : k, tb ? k : n, tb ? k : n, 5);
      std::vector<float> c = matrix(m, n, n, 6), expected = c;
      rowMajorProduct(ta, tb, m, n, k, 2.0f, a.data(), ta ? m : k, b.data(), tb ? k : n, -1.0f,
                      expected.data(), n);
      auto bf16 = [](const std::vector<float> &values) {
        std::vector<uint16_t> bits;
        for (float v : values)
          bits.push_back(roundToBF16(v));
        return bits;
      };
      std::vector<uint16_t> aBits = bf16(a), bBits = bf16(b), cBits = bf16(c);
      fsdprt_gemm_bf16(ta, tb, m, n, k, 2.0f, aBits.data(), ta ? m : k, bBits.data(),
                       tb ? k : n, -1.0f, cBits.data(), n);
      // Small integers: every value and result is a bf16, exactly.
      EXPECT_EQ(cBits, bf16(expected)) << "trans_a " << ta << " trans_b " << tb;
    }
  EXPECT_THAT(fake_cuda::callsTo("cublasGemmEx").at(0), HasSubstr(", bf16, fp32)"));
}

TEST_F(CublasGemm, EmptyProductsMakeNoCall) {
  float c = 5;
  fsdprt_sgemm(0, 0, 0, 1, 3, 1.0f, nullptr, 3, nullptr, 1, 0.0f, &c, 1);
  fsdprt_sgemm_batched(0, 0, 0, 1, 1, 1, 1.0f, nullptr, 1, 1, nullptr, 1, 1, 0.0f, &c, 1, 1);
  EXPECT_TRUE(fake_cuda::calls().empty());
}

TEST_F(CublasGemm, ArgumentsAreCheckedAsOnTheCpu) {
  std::vector<float> a(6), b(6), c(4);
  EXPECT_EXIT(fsdprt_sgemm(0, 0, 2, 2, 3, 1.0f, a.data(), 2, b.data(), 2, 0.0f, c.data(), 2),
              ExitedWithCode(1),
              HasSubstr("trainer: error: fsdprt_sgemm: lda = 2 is smaller than the row length 3"));
  float x = 0;
  EXPECT_EXIT(fsdprt_sgemm(0, 0, 1, 1, int64_t(1) << 31, 1.0f, &x, int64_t(1) << 31, &x, 1,
                           0.0f, &x, 1),
              ExitedWithCode(1),
              HasSubstr("fsdprt_sgemm: k = 2147483648 is negative or too large for BLAS"));
}

} // namespace
