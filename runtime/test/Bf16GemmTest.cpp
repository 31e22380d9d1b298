//===- Bf16GemmTest.cpp - fsdprt_gemm_bf16 on the CPU ---------------------===//
//
// Against a product computed in double from the same bf16 values: exact where
// every value is a small integer, within fp32 accumulation and one bf16
// rounding otherwise.
//
//===----------------------------------------------------------------------===//

#include "DType.h"
#include "fsdprt/fsdprt.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <vector>

using namespace fsdprt;
using testing::ExitedWithCode;
using testing::HasSubstr;

namespace {

/// A row-major rows x cols matrix of bf16 with row stride `ld`; padding holds
/// NaN, which a product that reads it would show.
std::vector<uint16_t> matrix(int64_t rows, int64_t cols, int64_t ld,
                             const std::function<double()> &value) {
  std::vector<uint16_t> m(static_cast<size_t>(rows * ld), roundToBF16(NAN));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      m[i * ld + j] = roundToBF16(value());
  return m;
}

struct Product {
  std::vector<uint16_t> c;
  std::vector<double> reference; // alpha * op(A) op(B) + beta * C in double
  std::vector<double> magnitude; // |alpha| * sum |a b| + |beta c|: the scale of the rounding
  int64_t ldc;
};

Product multiply(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, float beta,
                 const std::function<double()> &value) {
  int64_t aRows = ta ? k : m, aCols = ta ? m : k;
  int64_t bRows = tb ? n : k, bCols = tb ? k : n;
  int64_t lda = aCols + 2, ldb = bCols + 1, ldc = n + 3;
  std::vector<uint16_t> a = matrix(aRows, aCols, lda, value);
  std::vector<uint16_t> b = matrix(bRows, bCols, ldb, value);
  Product product{matrix(m, n, ldc, value), {}, {}, ldc};
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0, scale = 0;
      for (int64_t p = 0; p < k; ++p) {
        double x = bf16ToDouble(ta ? a[p * lda + i] : a[i * lda + p]);
        double y = bf16ToDouble(tb ? b[j * ldb + p] : b[p * ldb + j]);
        sum += x * y;
        scale += std::fabs(x * y);
      }
      double c = bf16ToDouble(product.c[i * ldc + j]);
      product.reference.push_back(alpha * sum + beta * c);
      product.magnitude.push_back(std::fabs(alpha) * scale + std::fabs(beta * c));
    }
  fsdprt_gemm_bf16(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta,
                   product.c.data(), ldc);
  return product;
}

TEST(Bf16Gemm, SmallIntegersAreExact) {
  for (int ta = 0; ta <= 1; ++ta)
    for (int tb = 0; tb <= 1; ++tb) {
      int counter = 0;
      // Sums stay below 256: every value is a bf16.
      auto value = [&] { return static_cast<double>((counter++ * 7) % 11 - 5); };
      Product p = multiply(ta, tb, 5, 4, 3, 2.0f, -1.0f, value);
      for (int64_t i = 0; i < 5; ++i)
        for (int64_t j = 0; j < 4; ++j)
          EXPECT_EQ(bf16ToDouble(p.c[i * p.ldc + j]), p.reference[i * 4 + j])
              << "trans_a " << ta << " trans_b " << tb << " element " << i << ", " << j;
    }
}

TEST(Bf16Gemm, RandomValuesWithinOneRounding) {
  std::mt19937 generator(17);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  auto value = [&] { return uniform(generator); };
  const int64_t m = 7, n = 5, k = 33;
  for (int ta = 0; ta <= 1; ++ta)
    for (int tb = 0; tb <= 1; ++tb) {
      Product p = multiply(ta, tb, m, n, k, 0.75f, 0.5f, value);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double got = bf16ToDouble(p.c[i * p.ldc + j]), want = p.reference[i * n + j];
          // Half a bf16 ulp of the result, and the fp32 sum's rounding.
          double tolerance = std::ldexp(std::fabs(want), -8) +
                             (k + 2) * std::ldexp(p.magnitude[i * n + j], -24);
          EXPECT_LE(std::fabs(got - want), tolerance)
              << "trans_a " << ta << " trans_b " << tb << " element " << i << ", " << j;
        }
    }
}

/// C = alpha * 1 * 1: what storing alpha in C rounds to.
double stored(float alpha) {
  uint16_t one = roundToBF16(1.0), c = 0;
  fsdprt_gemm_bf16(0, 0, 1, 1, 1, alpha, &one, 1, &one, 1, 0.0f, &c, 1);
  return bf16ToDouble(c);
}

TEST(Bf16Gemm, StoresRoundToNearestEven) {
  // Between 1 and 1 + 2^-7, the bf16 neighbours of 1.
  EXPECT_EQ(stored(1.0f + 0x1p-8f), 1.0) << "a tie goes to the even mantissa";
  EXPECT_EQ(stored(1.0f + 0x1p-8f + 0x1p-20f), 1.0 + 0x1p-7) << "above the tie";
  EXPECT_EQ(stored(1.0f + 0x1p-9f), 1.0) << "below the tie";
  EXPECT_EQ(stored(1.0f + 3 * 0x1p-8f), 1.0 + 0x1p-6) << "a tie from an odd mantissa goes up";
  EXPECT_EQ(stored(-1.0f - 0x1p-8f), -1.0);
  EXPECT_TRUE(std::isinf(stored(std::numeric_limits<float>::max())));
}

TEST(Bf16Gemm, BetaZeroIgnoresC) {
  uint16_t a[2] = {roundToBF16(1.0), roundToBF16(2.0)}, b[2] = {roundToBF16(3.0),
                                                                roundToBF16(4.0)};
  uint16_t c = roundToBF16(NAN);
  fsdprt_gemm_bf16(0, 0, 1, 1, 2, 1.0f, a, 2, b, 1, 0.0f, &c, 1);
  EXPECT_EQ(bf16ToDouble(c), 11.0);
}

TEST(Bf16GemmError, StrideTooSmall) {
  std::vector<uint16_t> a(6), b(6), c(4);
  EXPECT_EXIT(fsdprt_gemm_bf16(0, 0, 2, 2, 3, 1.0f, a.data(), 2, b.data(), 2, 0.0f, c.data(), 2),
              ExitedWithCode(1),
              HasSubstr("trainer: error: fsdprt_gemm_bf16: lda = 2 is smaller than the row "
                        "length 3"));
  EXPECT_EXIT(fsdprt_gemm_bf16(0, 0, int64_t(1) << 31, 1, 1, 1.0f, a.data(), 1, b.data(), 1, 0.0f,
                               c.data(), 1),
              ExitedWithCode(1),
              HasSubstr("fsdprt_gemm_bf16: m = 2147483648 is negative or too large for BLAS"));
}

} // namespace

TEST(Bf16Gemm, BatchedIsEachProduct) {
  // Three 3x4 by 4x2 products, matrices 16, 10 and 8 elements apart (past
  // their sizes: strides need not be tight); C keeps its gaps.
  const int64_t batch = 3, m = 3, n = 2, k = 4, strideA = 16, strideB = 10, strideC = 8;
  std::mt19937 generator(5);
  std::uniform_real_distribution<double> uniform(-2.0, 2.0);
  std::vector<uint16_t> a(batch * strideA), b(batch * strideB), c(batch * strideC, 0x7FC0);
  for (uint16_t &x : a)
    x = roundToBF16(uniform(generator));
  for (uint16_t &x : b)
    x = roundToBF16(uniform(generator));
  std::vector<uint16_t> each = c;
  fsdprt_gemm_bf16_batched(0, 1, batch, m, n, k, 1.5f, a.data(), k, strideA, b.data(), k, strideB,
                           0.0f, c.data(), n, strideC);
  for (int64_t i = 0; i < batch; ++i)
    fsdprt_gemm_bf16(0, 1, m, n, k, 1.5f, a.data() + i * strideA, k, b.data() + i * strideB, k,
                     0.0f, each.data() + i * strideC, n);
  EXPECT_EQ(c, each);
  EXPECT_EQ(c[m * n], 0x7FC0) << "past a matrix of C is not written";
}

TEST(Bf16GemmError, BatchedStrides) {
  std::vector<uint16_t> a(16), b(16), c(16);
  EXPECT_EXIT(fsdprt_gemm_bf16_batched(0, 0, 2, 2, 2, 2, 1.0f, a.data(), 2, 3, b.data(), 2, 4, 0.0f,
                                       c.data(), 2, 4),
              ExitedWithCode(1), HasSubstr("trainer: error: fsdprt_gemm_bf16_batched:"));
}
