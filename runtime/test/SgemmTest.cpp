//===- SgemmTest.cpp - fsdprt_sgemm against a naive product ---------------===//

#include "TestMatrices.h"
#include "fsdprt/fsdprt.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <vector>

using test::matrix;
using testing::ExitedWithCode;
using testing::HasSubstr;

namespace {

TEST(Sgemm, AllTranspositionsWithPaddedStrides) {
  const int64_t m = 5, n = 4, k = 3;
  for (int ta = 0; ta <= 1; ++ta)
    for (int tb = 0; tb <= 1; ++tb) {
      // Stored shapes: A is M x K (K x M transposed), B is K x N (N x K).
      int64_t aRows = ta ? k : m, aCols = ta ? m : k;
      int64_t bRows = tb ? n : k, bCols = tb ? k : n;
      int64_t lda = aCols + 2, ldb = bCols + 1, ldc = n + 3;
      std::vector<float> a = matrix(aRows, aCols, lda, 1);
      std::vector<float> b = matrix(bRows, bCols, ldb, 2);
      std::vector<float> c = matrix(m, n, ldc, 3);
      std::vector<float> expected = c;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          float sum = 0;
          for (int64_t p = 0; p < k; ++p)
            sum += (ta ? a[p * lda + i] : a[i * lda + p]) * (tb ? b[j * ldb + p] : b[p * ldb + j]);
          expected[i * ldc + j] = 2.0f * sum + 0.5f * c[i * ldc + j];
        }
      fsdprt_sgemm(ta, tb, m, n, k, 2.0f, a.data(), lda, b.data(), ldb, 0.5f, c.data(), ldc);
      EXPECT_EQ(c, expected) << "trans_a " << ta << " trans_b " << tb;
    }
}

TEST(Sgemm, BatchedMatchesOneProductPerMatrix) {
  const int64_t batch = 3, m = 4, n = 5, k = 2;
  for (int ta = 0; ta <= 1; ++ta)
    for (int tb = 0; tb <= 1; ++tb) {
      int64_t aRows = ta ? k : m, aCols = ta ? m : k;
      int64_t bRows = tb ? n : k, bCols = tb ? k : n;
      int64_t strideA = aRows * aCols + 1, strideB = bRows * bCols + 2, strideC = m * n + 3;
      std::vector<float> a = matrix(batch * strideA, 1, 1, 1);
      std::vector<float> b = matrix(batch * strideB, 1, 1, 2);
      std::vector<float> c = matrix(batch * strideC, 1, 1, 3);
      std::vector<float> expected = c;
      for (int64_t i = 0; i < batch; ++i)
        fsdprt_sgemm(ta, tb, m, n, k, 1.0f, a.data() + i * strideA, aCols,
                     b.data() + i * strideB, bCols, 1.0f, expected.data() + i * strideC, n);
      fsdprt_sgemm_batched(ta, tb, batch, m, n, k, 1.0f, a.data(), aCols, strideA, b.data(),
                           bCols, strideB, 1.0f, c.data(), n, strideC);
      EXPECT_EQ(c, expected) << "trans_a " << ta << " trans_b " << tb;
    }
}

TEST(Sgemm, BetaZeroIgnoresC) {
  std::vector<float> a = {1, 2}, b = {3, 4};
  std::vector<float> c = {std::numeric_limits<float>::quiet_NaN()};
  fsdprt_sgemm(0, 0, 1, 1, 2, 1.0f, a.data(), 2, b.data(), 1, 0.0f, c.data(), 1);
  EXPECT_EQ(c[0], 11.0f);
}

TEST(Sgemm, EmptyProducts) {
  std::vector<float> c = {5, 6};
  // No rows: nothing to do, whatever the pointers.
  fsdprt_sgemm(0, 0, 0, 2, 3, 1.0f, nullptr, 3, nullptr, 2, 0.0f, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{5, 6}));
  // No inner dimension: C = beta * C.
  float a = 0, b = 0;
  fsdprt_sgemm(0, 0, 1, 2, 0, 1.0f, &a, 1, &b, 2, 0.5f, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{2.5f, 3}));
}

TEST(SgemmError, StrideTooSmall) {
  std::vector<float> a(6), b(6), c(4);
  EXPECT_EXIT(fsdprt_sgemm(0, 0, 2, 2, 3, 1.0f, a.data(), 2, b.data(), 2, 0.0f, c.data(), 2),
              ExitedWithCode(1),
              HasSubstr("trainer: error: fsdprt_sgemm: lda = 2 is smaller than the row length 3"));
  EXPECT_EXIT(fsdprt_sgemm(0, 1, 2, 2, 3, 1.0f, a.data(), 3, b.data(), 2, 0.0f, c.data(), 2),
              ExitedWithCode(1), HasSubstr("fsdprt_sgemm: ldb = 2 is smaller than the row length 3"));
}

TEST(SgemmError, NegativeOrHugeDimensions) {
  float x = 0;
  EXPECT_EXIT(fsdprt_sgemm(0, 0, -1, 1, 1, 1.0f, &x, 1, &x, 1, 0.0f, &x, 1), ExitedWithCode(1),
              HasSubstr("fsdprt_sgemm: m = -1 is negative or too large for BLAS"));
  EXPECT_EXIT(fsdprt_sgemm(0, 0, 1, 1, int64_t(1) << 40, 1.0f, &x, int64_t(1) << 40, &x, 1, 0.0f,
                           &x, 1),
              ExitedWithCode(1),
              HasSubstr("fsdprt_sgemm: k = 1099511627776 is negative or too large for BLAS"));
}

} // namespace
