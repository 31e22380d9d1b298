//===- GemmBiasTest.cpp - The CPU's product with a bias epilogue ----------===//
//
// fsdprt_sgemm_bias (fsdprt.h), which the CUDA target calls for an f32
// product followed by a linear layer's bias and which the CPU backend runs
// for that target's kernels emulated on the CPU: C = alpha op(A) op(B) +
// beta C + bias, the bias added to every row.
//
//===----------------------------------------------------------------------===//

#include "fsdprt/fsdprt.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

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
}

} // namespace
