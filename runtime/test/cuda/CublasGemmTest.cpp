//===- CublasGemmTest.cpp - Row-major products on column-major cuBLAS -----===//
//
// The fake cuBLAS and cuBLASLt (FakeCuda.h) multiply column-major matrices as
// their documentation says; fsdprt.h's products are row-major. These tests
// check the mapping between the two (operands, dimensions and strides
// swapped) against plain row-major products, and how the bf16 products and
// the products with a bias use cuBLASLt: descriptors, epilogue, workspace,
// stream, and one heuristic query per distinct product.
//
//===----------------------------------------------------------------------===//

#include "abi/DType.h"
#include "cuda/FakeCuda.h"
#include "cuda/OpenCudaDevice.h"
#include "fsdprt/fsdprt.h"
#include "support/TestMatrices.h"

#include <cublasLt.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
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

constexpr uint16_t kBf16NaN = 0x7FC0;

/// A row-major rows x cols bf16 matrix with row stride `ld`: integers in
/// [-16, 16] (exact in bf16, their products and sums exact in fp32, so that
/// fp32 sums and double sums agree), NaN in the padding, which no product
/// may read.
std::vector<uint16_t> bf16Matrix(int64_t rows, int64_t cols, int64_t ld, int salt) {
  std::vector<uint16_t> m(static_cast<size_t>(rows * ld), kBf16NaN);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      m[i * ld + j] = roundToBF16(static_cast<double>((i * 13 + j * 7 + salt * 5) % 33 - 16));
  return m;
}

/// C = alpha op(A) op(B) + beta C, row-major, in double, rounded to bf16
/// once; C is not read when beta is 0, and its padding is left alone.
void bf16Reference(int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha, const uint16_t *a,
                   int64_t lda, const uint16_t *b, int64_t ldb, double beta, uint16_t *c,
                   int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < k; ++p)
        sum += bf16ToDouble(ta ? a[p * lda + i] : a[i * lda + p]) *
               bf16ToDouble(tb ? b[j * ldb + p] : b[p * ldb + j]);
      double value = alpha * sum;
      if (beta != 0)
        value += beta * bf16ToDouble(c[i * ldc + j]);
      c[i * ldc + j] = roundToBF16(value);
    }
}

/// Bits equal, except that NaNs are equal to each other.
bool sameBits(const std::vector<uint16_t> &x, const std::vector<uint16_t> &y) {
  if (x.size() != y.size())
    return false;
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i] != y[i] && !(std::isnan(bf16ToDouble(x[i])) && std::isnan(bf16ToDouble(y[i]))))
      return false;
  return true;
}

/// Sizes, strides, alpha and beta of one bf16 product test.
struct Bf16Case {
  int64_t m, n, k;
  float alpha, beta;
};

// Odd sizes whose sums need more than bf16's 8 bits (rounded once, to
// nearest even), every transposition, padded rows, and alpha and beta.
TEST_F(CublasGemm, Bf16IsTheRowMajorProductRoundedOnce) {
  const Bf16Case cases[] = {{5, 3, 7, 1.0f, 0.0f},
                            {3, 7, 13, 0.5f, -1.5f},
                            {1, 9, 11, 2.0f, 1.0f},
                            {7, 1, 5, -1.0f, 0.25f}};
  int rounded = 0;
  for (const Bf16Case &t : cases)
    for (int ta = 0; ta <= 1; ++ta)
      for (int tb = 0; tb <= 1; ++tb) {
        int64_t aCols = ta ? t.m : t.k, bCols = tb ? t.k : t.n;
        int64_t lda = aCols + 3, ldb = bCols + 1, ldc = t.n + 2;
        std::vector<uint16_t> a = bf16Matrix(ta ? t.k : t.m, aCols, lda, 1);
        std::vector<uint16_t> b = bf16Matrix(tb ? t.n : t.k, bCols, ldb, 2);
        std::vector<uint16_t> c = bf16Matrix(t.m, t.n, ldc, 3), expected = c;
        bf16Reference(ta, tb, t.m, t.n, t.k, t.alpha, a.data(), lda, b.data(), ldb, t.beta,
                      expected.data(), ldc);
        fsdprt_gemm_bf16(ta, tb, t.m, t.n, t.k, t.alpha, a.data(), lda, b.data(), ldb, t.beta,
                         c.data(), ldc);
        EXPECT_TRUE(sameBits(c, expected))
            << t.m << " x " << t.n << " x " << t.k << ", trans_a " << ta << ", trans_b " << tb;
        for (uint16_t value : expected)
          rounded += std::fabs(bf16ToDouble(value)) > 256;
      }
  EXPECT_GT(rounded, 0) << "results beyond 256 lose bits to the rounding";
  EXPECT_TRUE(fake_cuda::callsTo("cublasGemmEx").empty()) << "cuBLASLt, not cublasGemmEx";
  EXPECT_EQ(fake_cuda::callsTo("cublasLtMatmul(").size(), 16u);
}

TEST_F(CublasGemm, Bf16BatchedFollowsTheStrides) {
  const int64_t batch = 3, m = 3, n = 5, k = 7;
  for (int ta = 0; ta <= 1; ++ta)
    for (int tb = 0; tb <= 1; ++tb) {
      int64_t aRows = ta ? k : m, aCols = ta ? m : k;
      int64_t bRows = tb ? n : k, bCols = tb ? k : n;
      int64_t lda = aCols + 1, ldb = bCols, ldc = n + 1;
      // Gaps between the matrices, which no product may touch.
      int64_t strideA = aRows * lda + 5, strideB = bRows * ldb + 2, strideC = m * ldc + 3;
      std::vector<uint16_t> a = bf16Matrix(batch * strideA, 1, 1, 4);
      std::vector<uint16_t> b = bf16Matrix(batch * strideB, 1, 1, 5);
      std::vector<uint16_t> c = bf16Matrix(batch * strideC, 1, 1, 6), expected = c;
      for (int64_t i = 0; i < batch; ++i)
        bf16Reference(ta, tb, m, n, k, 0.5, a.data() + i * strideA, lda, b.data() + i * strideB,
                      ldb, 0.25, expected.data() + i * strideC, ldc);
      fsdprt_gemm_bf16_batched(ta, tb, batch, m, n, k, 0.5f, a.data(), lda, strideA, b.data(), ldb,
                               strideB, 0.25f, c.data(), ldc, strideC);
      EXPECT_TRUE(sameBits(c, expected)) << "trans_a " << ta << " trans_b " << tb;
    }
  EXPECT_EQ(fake_cuda::callsTo("cublasLtMatmul(").size(), 4u) << "one call per batch";
  // Every layout of a batch says its count and stride (in elements): B's
  // first (cuBLAS's A), then A's, then C's.
  std::vector<std::string> counts = fake_cuda::callsTo("cublasLtMatrixLayoutSetAttribute");
  ASSERT_GE(counts.size(), 6u);
  EXPECT_THAT(counts[0], testing::EndsWith(", batch count, 3)"));
  EXPECT_THAT(counts[1], testing::EndsWith(", batch stride, 37)")) << "B: 7 x 5 + 2";
  EXPECT_THAT(counts[3], testing::EndsWith(", batch stride, 29)")) << "A: 3 x 8 + 5";
  EXPECT_THAT(counts[5], testing::EndsWith(", batch stride, 21)")) << "C: 3 x 6 + 3";
}

// beta = 0: C's previous contents are not read, not even a NaN.
TEST_F(CublasGemm, Bf16WithBetaZeroIgnoresC) {
  const int64_t m = 3, n = 5, k = 7;
  std::vector<uint16_t> a = bf16Matrix(m, k, k, 7), b = bf16Matrix(k, n, n, 8);
  std::vector<uint16_t> c(m * n, kBf16NaN), expected(m * n, 0);
  bf16Reference(0, 0, m, n, k, 1.0, a.data(), k, b.data(), n, 0.0, expected.data(), n);
  fsdprt_gemm_bf16(0, 0, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n);
  EXPECT_EQ(c, expected);
  // The same product twice.
  std::vector<uint16_t> a2 = a, b2 = b, batched(2 * m * n, kBf16NaN);
  a2.insert(a2.end(), a.begin(), a.end());
  b2.insert(b2.end(), b.begin(), b.end());
  fsdprt_gemm_bf16_batched(0, 0, 2, m, n, k, 1.0f, a2.data(), k, m * k, b2.data(), n, k * n, 0.0f,
                           batched.data(), n, m * n);
  EXPECT_EQ(std::vector<uint16_t>(batched.begin(), batched.begin() + m * n), expected);
  EXPECT_EQ(std::vector<uint16_t>(batched.begin() + m * n, batched.end()), expected);
}

// What each plan asks of cuBLASLt: fp32 compute and scale, bf16 layouts
// (B's before A's), the whole workspace, split-K sums only in fp32; each
// product runs on the compute stream with the workspace of device1.
TEST_F(CublasGemm, Bf16UsesTheWorkspaceOnTheComputeStream) {
  const int64_t m = 3, n = 5, k = 7;
  std::vector<uint16_t> a = bf16Matrix(k, m, m, 1), b = bf16Matrix(k, n, n, 2), c(m * n);
  fsdprt_gemm_bf16(1, 0, m, n, k, 1.0f, a.data(), m, b.data(), n, 0.0f, c.data(), n);
  std::string matmul = fake_cuda::results("cublasLtMatmulDescCreate").at(0);
  std::vector<std::string> layouts = fake_cuda::results("cublasLtMatrixLayoutCreate");
  ASSERT_EQ(layouts.size(), 3u);
  std::string preference = fake_cuda::results("cublasLtMatmulPreferenceCreate").at(0);
  std::string algorithm = fake_cuda::results("cublasLtMatmulAlgoGetHeuristic").at(0);
  EXPECT_THAT(fake_cuda::callsTo("cublasLtMatmulDesc"),
              ElementsAre("cublasLtMatmulDescCreate(fp32, f32) -> " + matmul,
                          "cublasLtMatmulDescSetAttribute(" + matmul + ", transa, N)",
                          "cublasLtMatmulDescSetAttribute(" + matmul + ", transb, T)"));
  EXPECT_THAT(fake_cuda::callsTo("cublasLtMatrixLayoutCreate"),
              ElementsAre("cublasLtMatrixLayoutCreate(bf16, 5, 7, 5) -> " + layouts[0],
                          "cublasLtMatrixLayoutCreate(bf16, 3, 7, 3) -> " + layouts[1],
                          "cublasLtMatrixLayoutCreate(bf16, 5, 3, 5) -> " + layouts[2]));
  std::vector<std::string> preferences = fake_cuda::callsTo("cublasLtMatmulPreferenceSetAttribute");
  ASSERT_GE(preferences.size(), 2u);
  EXPECT_EQ(preferences[0],
            "cublasLtMatmulPreferenceSetAttribute(" + preference + ", max workspace, 33554432)");
  EXPECT_EQ(preferences[1], "cublasLtMatmulPreferenceSetAttribute(" + preference +
                                ", reduction schemes, " +
                                std::to_string(CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE) + ")");
  EXPECT_THAT(fake_cuda::callsTo("cublasLtMatmulPreferenceDestroy"),
              ElementsAre("cublasLtMatmulPreferenceDestroy(" + preference + ")"));
  std::string lt = fake_cuda::callsTo("cublasLtMatmul(").at(0);
  EXPECT_THAT(lt, testing::StartsWith("cublasLtMatmul(cublasLt"));
  EXPECT_THAT(lt,
              testing::EndsWith(", " + matmul + ", " + layouts[0] + ", " + layouts[1] + ", " +
                                layouts[2] + ", " + layouts[2] + ", " + algorithm +
                                ", device1+0, 33554432, " + stream(FSDPRT_STREAM_COMPUTE) + ")"));
}

// The heuristic runs once per distinct product; the step calls the same
// few every iteration.
TEST_F(CublasGemm, Bf16AsksTheHeuristicOncePerProduct) {
  std::vector<uint16_t> a = bf16Matrix(16, 8, 8, 1), b = bf16Matrix(16, 8, 8, 2), c(64);
  auto product = [&](int ta, int64_t m, int64_t n, int64_t k) {
    fsdprt_gemm_bf16(ta, 0, m, n, k, 1.0f, a.data(), 8, b.data(), 8, 0.0f, c.data(), 8);
  };
  product(0, 3, 5, 7);
  product(0, 3, 5, 7);
  product(0, 5, 3, 7);
  product(0, 3, 5, 7);
  product(1, 3, 5, 7);
  product(0, 5, 3, 7);
  for (int i = 0; i < 2; ++i)
    fsdprt_gemm_bf16_batched(0, 0, 2, 3, 5, 7, 1.0f, a.data(), 8, 24, b.data(), 8, 56, 0.0f,
                             c.data(), 8, 24);
  EXPECT_EQ(fake_cuda::callsTo("cublasLtMatmulAlgoGetHeuristic").size(), 4u);
  EXPECT_EQ(fake_cuda::callsTo("cublasLtMatmulDescCreate").size(), 4u) << "descriptors kept too";
  EXPECT_EQ(fake_cuda::callsTo("cublasLtMatmul(").size(), 8u);
}

// A view into a buffer may be less aligned than the 256 bytes cuBLASLt
// assumes unless told (the fake's algorithms then refuse it): the plan says
// how aligned each matrix is, and a differently aligned view has its own.
TEST_F(CublasGemm, Bf16ViewsLessAlignedThanTheDefault) {
  alignas(256) uint16_t a[64], b[64], c[64];
  for (int i = 0; i < 64; ++i)
    a[i] = b[i] = roundToBF16(i % 5 - 2);
  fsdprt_gemm_bf16(0, 0, 2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2);
  fsdprt_gemm_bf16(0, 0, 2, 2, 2, 1.0f, a + 1, 2, b + 3, 2, 0.0f, c + 5, 2);
  std::vector<uint16_t> expected(4);
  bf16Reference(0, 0, 2, 2, 2, 1.0, a + 1, 2, b + 3, 2, 0.0, expected.data(), 2);
  EXPECT_EQ(std::vector<uint16_t>(c + 5, c + 9), expected);
  EXPECT_EQ(fake_cuda::callsTo("cublasLtMatmulAlgoGetHeuristic").size(), 2u);
  std::vector<std::string> alignments = fake_cuda::callsTo("cublasLtMatmulPreferenceSetAttribute");
  ASSERT_EQ(alignments.size(), 12u);
  // The second product: cuBLAS's A is fsdprt.h's B, 6 bytes in.
  EXPECT_THAT(alignments[8], testing::EndsWith(", alignment A, 2)"));
  EXPECT_THAT(alignments[9], testing::EndsWith(", alignment B, 2)"));
  EXPECT_THAT(alignments[10], testing::EndsWith(", alignment C, 2)"));
  EXPECT_THAT(alignments[11], testing::EndsWith(", alignment D, 2)"));
  EXPECT_THAT(alignments[2], testing::EndsWith(", alignment A, 256)"));
}

TEST_F(CublasGemm, Bf16WithoutAnAlgorithmIsFatalNamingTheProduct) {
  std::vector<uint16_t> a(64), b(64), c(64);
  fake_cuda::setHeuristicAlgorithms(0);
  EXPECT_EXIT(fsdprt_gemm_bf16(0, 1, 3, 5, 7, 1.0f, a.data(), 7, b.data(), 7, 0.0f, c.data(), 5),
              ExitedWithCode(1),
              HasSubstr("trainer: error: fsdprt_gemm_bf16: cuBLASLt has no algorithm for the bf16 "
                        "product m = 3, n = 5, k = 7, trans_a = 0, trans_b = 1, lda = 7, ldb = 7, "
                        "ldc = 5 (cublasLtMatmulAlgoGetHeuristic found none)\n"));
  fake_cuda::setHeuristicAlgorithms(1);
  fake_cuda::failNext("cublasLtMatmulAlgoGetHeuristic", CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EXIT(fsdprt_gemm_bf16_batched(0, 0, 2, 2, 2, 2, 1.0f, a.data(), 2, 4, b.data(), 2, 4, 0.0f,
                                       c.data(), 2, 4),
              ExitedWithCode(1),
              HasSubstr("trainer: error: fsdprt_gemm_bf16_batched: cuBLASLt has no algorithm for "
                        "the bf16 product m = 2, n = 2, k = 2, trans_a = 0, trans_b = 0, lda = 2, "
                        "ldb = 2, ldc = 2, batch = 2, stride_a = 4, stride_b = 4, stride_c = 4 "
                        "(cublasLtMatmulAlgoGetHeuristic found none)\n"));
}

// k = 0: no sum, C = beta C, which cuBLAS defines and cuBLASLt's
// documentation does not.
TEST_F(CublasGemm, Bf16WithoutASumScalesC) {
  std::vector<uint16_t> c = {roundToBF16(2), roundToBF16(-3), roundToBF16(5), roundToBF16(7)};
  fsdprt_gemm_bf16(0, 0, 2, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.5f, c.data(), 2);
  EXPECT_EQ(c, (std::vector<uint16_t>{roundToBF16(1), roundToBF16(-1.5), roundToBF16(2.5),
                                      roundToBF16(3.5)}));
  std::vector<uint16_t> batched(6, kBf16NaN);
  fsdprt_gemm_bf16_batched(0, 0, 2, 1, 2, 0, 1.0f, nullptr, 1, 1, nullptr, 2, 1, 0.0f,
                           batched.data(), 2, 3);
  EXPECT_EQ(batched[0], 0);
  EXPECT_EQ(batched[1], 0);
  EXPECT_EQ(batched[2], kBf16NaN) << "between the matrices";
  EXPECT_EQ(batched[3], 0);
  EXPECT_EQ(batched[4], 0);
  EXPECT_TRUE(fake_cuda::callsTo("cublasLt").empty());
}

// Closing cuBLAS destroys every plan's descriptors.
TEST_F(CublasGemm, ClosingDestroysThePlans) {
  std::vector<uint16_t> a(64), b(64), c(64);
  fsdprt_gemm_bf16(0, 0, 2, 2, 2, 1.0f, a.data(), 2, b.data(), 2, 0.0f, c.data(), 2);
  std::string matmul = fake_cuda::results("cublasLtMatmulDescCreate").at(0);
  std::vector<std::string> layouts = fake_cuda::results("cublasLtMatrixLayoutCreate");
  ASSERT_EQ(layouts.size(), 3u);
  fake_cuda::reset();
  closeDevice();
  EXPECT_THAT(fake_cuda::callsTo("cublasLtMatrixLayoutDestroy"),
              testing::UnorderedElementsAre("cublasLtMatrixLayoutDestroy(" + layouts[0] + ")",
                                            "cublasLtMatrixLayoutDestroy(" + layouts[1] + ")",
                                            "cublasLtMatrixLayoutDestroy(" + layouts[2] + ")"));
  EXPECT_THAT(fake_cuda::callsTo("cublasLtMatmulDescDestroy"),
              ElementsAre("cublasLtMatmulDescDestroy(" + matmul + ")"));
  // Opened again, a product makes its plan again.
  openDevice();
  fake_cuda::reset();
  fsdprt_gemm_bf16(0, 0, 2, 2, 2, 1.0f, a.data(), 2, b.data(), 2, 0.0f, c.data(), 2);
  EXPECT_EQ(fake_cuda::callsTo("cublasLtMatmulAlgoGetHeuristic").size(), 1u);
}

/// `bias` (n elements) added to each row of the row-major m x n matrix C.
void addBias(int64_t m, int64_t n, float *c, int64_t ldc, const float *bias) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      c[i * ldc + j] += bias[j];
}

TEST_F(CublasGemm, SgemmBiasIsTheRowMajorProductPlusBias) {
  const int64_t m = 5, n = 4, k = 3;
  std::vector<float> bias = matrix(1, n, n, 4);
  for (int ta = 0; ta <= 1; ++ta)
    for (int tb = 0; tb <= 1; ++tb) {
      int64_t aRows = ta ? k : m, aCols = ta ? m : k;
      int64_t bRows = tb ? n : k, bCols = tb ? k : n;
      int64_t lda = aCols + 2, ldb = bCols + 1, ldc = n + 3;
      std::vector<float> a = matrix(aRows, aCols, lda, 1), b = matrix(bRows, bCols, ldb, 2);
      std::vector<float> c = matrix(m, n, ldc, 3), expected = c;
      rowMajorProduct(ta, tb, m, n, k, 2.0f, a.data(), lda, b.data(), ldb, 0.5f, expected.data(),
                      ldc);
      addBias(m, n, expected.data(), ldc, bias.data());
      fsdprt_sgemm_bias(ta, tb, m, n, k, 2.0f, a.data(), lda, b.data(), ldb, 0.5f, c.data(), ldc,
                        bias.data());
      EXPECT_EQ(c, expected) << "trans_a " << ta << " trans_b " << tb;
    }
  EXPECT_TRUE(fake_cuda::callsTo("cublasSgemm").empty()) << "cuBLASLt, for its epilogue";
  EXPECT_EQ(fake_cuda::callsTo("cublasLtMatmul(").size(), 4u);
  // f32 layouts, B's before A's: trans_a 0, trans_b 0 has B 3 x 4 (ldb 5),
  // A 5 x 3 (lda 5), C 5 x 4 (ldc 7).
  EXPECT_THAT(
      fake_cuda::callsTo("cublasLtMatrixLayoutCreate"),
      testing::IsSupersetOf({testing::StartsWith("cublasLtMatrixLayoutCreate(f32, 4, 3, 5)"),
                             testing::StartsWith("cublasLtMatrixLayoutCreate(f32, 3, 5, 5)"),
                             testing::StartsWith("cublasLtMatrixLayoutCreate(f32, 4, 5, 7)")}));
}

// The plan's descriptor has the bias epilogue and a bias pointer; each call
// sets its own bias before cublasLtMatmul, so that a product of the same
// shape (another layer's) reuses the plan with its bias.
TEST_F(CublasGemm, BiasProductsSetTheEpilogueAndTheirBias) {
  const int64_t m = 3, n = 4, k = 2;
  std::vector<float> a = matrix(m, k, k, 1), b = matrix(k, n, n, 2);
  // Two biases in device memory (named by the fake), both 256-byte aligned.
  void *device = nullptr;
  ASSERT_EQ(cudaMalloc(&device, 512), cudaSuccess);
  auto *bias1 = static_cast<float *>(device), *bias2 = bias1 + 64;
  std::vector<float> values1 = matrix(1, n, n, 3), values2 = matrix(1, n, n, 4);
  std::memcpy(bias1, values1.data(), n * sizeof(float));
  std::memcpy(bias2, values2.data(), n * sizeof(float));
  fake_cuda::reset();
  // Outputs as aligned as each other: the same plan.
  alignas(256) float c1[m * n], c2[m * n];
  std::vector<float> expected1(m * n), expected2(m * n);
  rowMajorProduct(0, 0, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, expected1.data(), n);
  expected2 = expected1;
  addBias(m, n, expected1.data(), n, values1.data());
  addBias(m, n, expected2.data(), n, values2.data());
  fsdprt_sgemm_bias(0, 0, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c1, n, bias1);
  fsdprt_sgemm_bias(0, 0, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c2, n, bias2);
  EXPECT_EQ(std::vector<float>(c1, c1 + m * n), expected1);
  EXPECT_EQ(std::vector<float>(c2, c2 + m * n), expected2) << "the second bias";
  EXPECT_EQ(fake_cuda::callsTo("cublasLtMatmulAlgoGetHeuristic").size(), 1u) << "one plan";
  std::string matmul = fake_cuda::results("cublasLtMatmulDescCreate").at(0);
  EXPECT_THAT(
      fake_cuda::callsTo("cublasLtMatmulDesc"),
      ElementsAre("cublasLtMatmulDescCreate(fp32, f32) -> " + matmul,
                  "cublasLtMatmulDescSetAttribute(" + matmul + ", transa, N)",
                  "cublasLtMatmulDescSetAttribute(" + matmul + ", transb, N)",
                  "cublasLtMatmulDescSetAttribute(" + matmul + ", epilogue, bias)",
                  "cublasLtMatmulDescSetAttribute(" + matmul + ", bias pointer, device2+0)",
                  "cublasLtMatmulDescSetAttribute(" + matmul + ", bias pointer, device2+0)",
                  "cublasLtMatmulDescSetAttribute(" + matmul + ", bias pointer, device2+256)"));
  // Each product's bias is set just before it.
  const std::vector<std::string> &log = fake_cuda::calls();
  int products = 0;
  for (size_t i = 1; i < log.size(); ++i)
    if (log[i].rfind("cublasLtMatmul(", 0) == 0) {
      EXPECT_THAT(log[i - 1], testing::EndsWith(products ? "device2+256)" : "device2+0)"));
      ++products;
    }
  EXPECT_EQ(products, 2);
  cudaFree(device);
}

// cuBLASLt's heuristic reads the bias pointer for the alignment it may
// assume (the fake's algorithms then refuse a less aligned bias): a bias
// less aligned than the plan's first one has a plan of its own.
TEST_F(CublasGemm, BiasPlansFollowTheBiasAlignment) {
  alignas(256) float bias[16];
  for (int i = 0; i < 16; ++i)
    bias[i] = static_cast<float>(i - 8);
  std::vector<float> a = matrix(2, 3, 3, 1), b = matrix(3, 4, 4, 2);
  // One output: its alignment does not change the plan.
  alignas(256) float c[8];
  for (const float *offset : {bias, bias + 4, bias + 12}) {
    std::vector<float> expected(8);
    rowMajorProduct(0, 0, 2, 4, 3, 1.0f, a.data(), 3, b.data(), 4, 0.0f, expected.data(), 4);
    addBias(2, 4, expected.data(), 4, offset);
    fsdprt_sgemm_bias(0, 0, 2, 4, 3, 1.0f, a.data(), 3, b.data(), 4, 0.0f, c, 4, offset);
    EXPECT_EQ(std::vector<float>(c, c + 8), expected) << "bias + " << offset - bias;
  }
  // 256 and 16 bytes (the plan of bias + 4).
  EXPECT_EQ(fake_cuda::callsTo("cublasLtMatmulAlgoGetHeuristic").size(), 2u);
}

// The epilogue loads the bias 16 bytes at a time: a bias less aligned is an
// error naming the call, never a fault on the GPU (the compiler adds such a
// bias in a kernel of its own: fsdp-cuda-split-unaligned-biases).
TEST_F(CublasGemm, ABiasNotSixteenByteAlignedIsAnError) {
  alignas(256) float bias[8] = {};
  std::vector<float> a = matrix(2, 3, 3, 1), b = matrix(3, 4, 4, 2);
  alignas(256) float c[8];
  for (const float *offset : {bias + 1, bias + 2, bias + 3})
    EXPECT_EXIT(
        fsdprt_sgemm_bias(0, 0, 2, 4, 3, 1.0f, a.data(), 3, b.data(), 4, 0.0f, c, 4, offset),
        ExitedWithCode(1),
        HasSubstr("trainer: error: fsdprt_sgemm_bias: the bias is not 16-byte aligned, as "
                  "cuBLASLt's bias epilogue needs"))
        << "bias + " << offset - bias;
}

// The manifest's allow_tf32 covers the products with a bias (a compute type
// on cuBLASLt) as it does fsdprt_sgemm (cuBLAS's math mode).
TEST_F(CublasGemm, SgemmBiasComputesInTf32OnlyWhenAllowed) {
  std::vector<float> a = matrix(2, 3, 3, 1), b = matrix(3, 4, 4, 2), bias = matrix(1, 4, 4, 3);
  std::vector<float> c(8), expected(8);
  rowMajorProduct(0, 0, 2, 4, 3, 1.0f, a.data(), 3, b.data(), 4, 0.0f, expected.data(), 4);
  addBias(2, 4, expected.data(), 4, bias.data());
  auto product = [&] {
    fsdprt_sgemm_bias(0, 0, 2, 4, 3, 1.0f, a.data(), 3, b.data(), 4, 0.0f, c.data(), 4,
                      bias.data());
    EXPECT_EQ(c, expected);
  };
  setAllowTf32(true);
  product();
  EXPECT_THAT(fake_cuda::callsTo("cublasLtMatmulDescCreate"),
              ElementsAre(HasSubstr("(fast-tf32, f32)")));
  fake_cuda::reset();
  setAllowTf32(false);
  product();
  EXPECT_THAT(fake_cuda::callsTo("cublasLtMatmulDescCreate"), ElementsAre(HasSubstr("(fp32, f32)")))
      << "a plan of its own";
}

// k = 0: cuBLASLt does not define a product without a sum, and the compiler
// never emits one with a bias: an error, as on the CPU (checkBias).
TEST_F(CublasGemm, BiasWithoutASumIsAnError) {
  std::vector<float> c(4), bias(2);
  EXPECT_EXIT(fsdprt_sgemm_bias(0, 0, 2, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.0f, c.data(), 2,
                                bias.data()),
              ExitedWithCode(1),
              HasSubstr("fsdprt_sgemm_bias: k = 0: a product with a bias needs a sum (k > 0)"));
}

TEST_F(CublasGemm, BiasProductsWithoutAnAlgorithmAreFatalNamingThem) {
  fake_cuda::setHeuristicAlgorithms(0);
  std::vector<float> f(64);
  EXPECT_EXIT(
      fsdprt_sgemm_bias(1, 0, 2, 3, 4, 1.0f, f.data(), 2, f.data(), 3, 0.0f, f.data(), 3, f.data()),
      ExitedWithCode(1),
      HasSubstr("trainer: error: fsdprt_sgemm_bias: cuBLASLt has no algorithm for the f32 "
                "product with a bias m = 2, n = 3, k = 4, trans_a = 1, trans_b = 0, "
                "lda = 2, ldb = 3, ldc = 3 (cublasLtMatmulAlgoGetHeuristic found none)\n"));
}

// What the fake's cuBLASLt refuses, as cuBLASLt would: an epilogue it does
// not model, the bias epilogue without a bias, and a bias less aligned than
// the one the heuristic saw.
TEST_F(CublasGemm, FakeCublasLtRefusesWhatItDoesNotModel) {
  cublasLtHandle_t lt = nullptr;
  ASSERT_EQ(cublasLtCreate(&lt), CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulDesc_t desc = nullptr;
  ASSERT_EQ(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), CUBLAS_STATUS_SUCCESS);
  uint32_t relu = CUBLASLT_EPILOGUE_RELU, bias = CUBLASLT_EPILOGUE_BIAS;
  EXPECT_EQ(
      cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &relu, sizeof(relu)),
      CUBLAS_STATUS_NOT_SUPPORTED);
  ASSERT_EQ(
      cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &bias, sizeof(bias)),
      CUBLAS_STATUS_SUCCESS);
  cublasLtMatrixLayout_t layout = nullptr;
  ASSERT_EQ(cublasLtMatrixLayoutCreate(&layout, CUDA_R_32F, 1, 1, 1), CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulPreference_t preference = nullptr;
  ASSERT_EQ(cublasLtMatmulPreferenceCreate(&preference), CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulHeuristicResult_t result = {};
  int found = 0;
  ASSERT_EQ(cublasLtMatmulAlgoGetHeuristic(lt, desc, layout, layout, layout, layout, preference, 1,
                                           &result, &found),
            CUBLAS_STATUS_SUCCESS);
  alignas(256) float x[2] = {1, 2};
  float alpha = 1, beta = 0;
  auto matmul = [&] {
    return cublasLtMatmul(lt, desc, &alpha, x, layout, x, layout, &beta, x, layout, x, layout,
                          &result.algo, nullptr, 0, nullptr);
  };
  EXPECT_EQ(matmul(), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_THAT(fake_cuda::calls(), testing::Contains(std::string(
                                      "cublasLtMatmul: the bias epilogue has no bias pointer")));
  EXPECT_THAT(fake_cuda::calls(),
              testing::Contains(HasSubstr("epilogue, " + std::to_string(relu) + ")")));
  // An algorithm chosen for a 256-byte aligned bias, then given x + 1.
  const float *biasPointer = x;
  ASSERT_EQ(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &biasPointer,
                                           sizeof(biasPointer)),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasLtMatmulAlgoGetHeuristic(lt, desc, layout, layout, layout, layout, preference, 1,
                                           &result, &found),
            CUBLAS_STATUS_SUCCESS);
  biasPointer = x + 1;
  ASSERT_EQ(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &biasPointer,
                                           sizeof(biasPointer)),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(matmul(), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(fake_cuda::calls().back(),
            "cublasLtMatmul: the bias is less aligned than the 256 bytes the algorithm needs");
  biasPointer = x;
  ASSERT_EQ(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &biasPointer,
                                           sizeof(biasPointer)),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(matmul(), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(x[0], 2) << "1 x 1 + the bias 1";
  cublasLtMatmulPreferenceDestroy(preference);
  cublasLtMatrixLayoutDestroy(layout);
  cublasLtMatmulDescDestroy(desc);
  cublasLtDestroy(lt);
}

TEST_F(CublasGemm, EmptyProductsMakeNoCall) {
  float c = 5;
  fsdprt_sgemm(0, 0, 0, 1, 3, 1.0f, nullptr, 3, nullptr, 1, 0.0f, &c, 1);
  fsdprt_sgemm_batched(0, 0, 0, 1, 1, 1, 1.0f, nullptr, 1, 1, nullptr, 1, 1, 0.0f, &c, 1, 1);
  uint16_t h = 5;
  fsdprt_gemm_bf16(0, 0, 1, 0, 3, 1.0f, nullptr, 3, nullptr, 1, 0.0f, &h, 1);
  fsdprt_gemm_bf16_batched(0, 0, 0, 1, 1, 1, 1.0f, nullptr, 1, 1, nullptr, 1, 1, 0.0f, &h, 1, 1);
  // With nothing to add it to, the bias may be NULL.
  fsdprt_sgemm_bias(0, 0, 1, 0, 3, 1.0f, nullptr, 3, nullptr, 1, 0.0f, &c, 1, nullptr);
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
  // The products with a bias: the product's arguments, then the bias.
  EXPECT_EXIT(
      fsdprt_sgemm_bias(0, 0, 2, 2, 3, 1.0f, a.data(), 2, b.data(), 2, 0.0f, c.data(), 2, nullptr),
      ExitedWithCode(1),
      HasSubstr("trainer: error: fsdprt_sgemm_bias: lda = 2 is smaller than the row "
                "length 3"));
  EXPECT_EXIT(
      fsdprt_sgemm_bias(0, 0, 2, 4, 3, 1.0f, a.data(), 3, b.data(), 4, 0.0f, c.data(), 4, nullptr),
      ExitedWithCode(1),
      HasSubstr("trainer: error: fsdprt_sgemm_bias: bias is NULL, but the product has "
                "n = 4 columns to add it to\n"));
}

} // namespace
