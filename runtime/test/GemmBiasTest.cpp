//===- GemmBiasTest.cpp - The CPU's products with a bias epilogue ---------===//
//
// fsdprt_sgemm_bias and fsdprt_gemm_bf16_bias (fsdprt.h), which the CUDA
// target calls for a product followed by a linear layer's bias and which the
// CPU backend runs for that target's kernels emulated on the CPU: C = alpha
// op(A) op(B) + bias, the bias added to every row of the f32 sums before
// they are stored, rounded once in bf16.
//
//===----------------------------------------------------------------------===//

#include "DType.h"
#include "fsdprt/fsdprt.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace fsdprt;
using testing::ExitedWithCode;
using testing::HasSubstr;

namespace {

/// Small integers: every sum below is exact in f32.
float entry(int64_t i, int64_t j, int salt) {
  return static_cast<float>((i * 7 + j * 3 + salt) % 9 - 4);
}

TEST(GemmBias, SgemmAddsTheBiasToEveryRow) {
  const int64_t m = 5, n = 3, k = 4, ldc = n + 2;
  for (int ta = 0; ta <= 1; ++ta)
    for (int tb = 0; tb <= 1; ++tb) {
      // A is m x k after op, B k x n after op, stored transposed when asked.
      std::vector<float> a(m * k), b(k * n), bias(n), c(m * ldc, -1000.0f);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t q = 0; q < k; ++q)
          a[ta ? q * m + i : i * k + q] = entry(i, q, 1);
      for (int64_t q = 0; q < k; ++q)
        for (int64_t j = 0; j < n; ++j)
          b[tb ? j * k + q : q * n + j] = entry(q, j, 2);
      for (int64_t j = 0; j < n; ++j)
        bias[j] = 0.5f * static_cast<float>(j) - 1.0f;
      fsdprt_sgemm_bias(ta, tb, m, n, k, 2.0f, a.data(), ta ? m : k, b.data(), tb ? k : n, 0.0f,
                        c.data(), ldc, bias.data());
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          double want = bias[j];
          for (int64_t q = 0; q < k; ++q)
            want += 2.0 * entry(i, q, 1) * entry(q, j, 2);
          EXPECT_EQ(c[i * ldc + j], want) << "trans " << ta << tb << " at " << i << ", " << j;
        }
        EXPECT_EQ(c[i * ldc + n], -1000.0f) << "the row's padding is not C";
      }
    }
}

TEST(GemmBias, Bf16SumAndBiasRoundOnce) {
  // A B = 1 * 1 + 2^-8 * 1 = 1 + 2^-8 exactly (k = 2), and the bias 2^-16:
  // 1 + 2^-8 + 2^-16 rounds up to 1 + 2^-7. Rounding the product first
  // (1 + 2^-8, a tie, goes to 1) and then adding the bias would give 1.
  uint16_t a[2] = {floatToBF16(1.0f), floatToBF16(0x1p-8f)};
  uint16_t b[2] = {floatToBF16(1.0f), floatToBF16(1.0f)};
  uint16_t bias = floatToBF16(0x1p-16f), c = floatToBF16(NAN);
  fsdprt_gemm_bf16_bias(0, 0, 1, 1, 2, 1.0f, a, 2, b, 1, 0.0f, &c, 1, &bias);
  EXPECT_EQ(bf16ToFloat(c), 1.0f + 0x1p-7f);
  // Each column its own bias.
  uint16_t ones[2] = {floatToBF16(1.0f), floatToBF16(1.0f)};
  uint16_t biases[2] = {floatToBF16(-3.0f), floatToBF16(0.25f)}, row[2] = {};
  fsdprt_gemm_bf16_bias(0, 0, 1, 2, 1, 1.5f, ones, 1, ones, 2, 0.0f, row, 2, biases);
  EXPECT_EQ(bf16ToFloat(row[0]), -1.5f);
  EXPECT_EQ(bf16ToFloat(row[1]), 1.75f);
}

TEST(GemmBiasError, NoSum) {
  float x = 1.0f, c = 0.0f, bias = 2.0f;
  EXPECT_EXIT(fsdprt_sgemm_bias(0, 0, 1, 1, 0, 1.0f, &x, 1, &x, 1, 0.0f, &c, 1, &bias),
              ExitedWithCode(1),
              HasSubstr("fsdprt_sgemm_bias: k = 0: a product with a bias needs a sum (k > 0)"));
}

TEST(GemmBiasError, NullBias) {
  float x = 1.0f, c = 0.0f;
  EXPECT_EXIT(fsdprt_sgemm_bias(0, 0, 1, 1, 1, 1.0f, &x, 1, &x, 1, 0.0f, &c, 1, nullptr),
              ExitedWithCode(1),
              HasSubstr("trainer: error: fsdprt_sgemm_bias: bias is NULL, but the product has "
                        "n = 1 columns to add it to"));
  uint16_t h = floatToBF16(1.0f), hc = 0;
  EXPECT_EXIT(fsdprt_gemm_bf16_bias(0, 0, 1, 1, 1, 1.0f, &h, 1, &h, 1, 0.0f, &hc, 1, nullptr),
              ExitedWithCode(1), HasSubstr("fsdprt_gemm_bf16_bias: bias is NULL"));
}

} // namespace
