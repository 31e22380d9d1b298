//===- SgemmTest.cpp - fsdprt_sgemm on the CPU ----------------------------===//
//
// Every way an f32 product runs on the CPU (Sgemm.h): oneDNN's brgemm matmul
// and its gemm:jit (each skipped, with a message, where oneDNN has none for
// this CPU) and OpenBLAS, each called directly, and the public entry points,
// whichever way they go. Small-integer products are exact in f32 whatever the
// order of the sums; products of random values are held to the classic bound
// of a dot product summed in f32. ctest runs this suite again with
// DNNL_MAX_CPU_ISA=AVX2, where the entry points must take OpenBLAS
// (fsdprt-tests.gemm-fallback), and as on a Xeon without BF16 whose OpenBLAS
// runs its generic core, where they must route around it
// (fsdprt-tests.gemm-no-bf16).
//
//===----------------------------------------------------------------------===//

#include "cpu/OnednnIsa.h"
#include "cpu/OpenblasCore.h"
#include "cpu/Sgemm.h"
#include "fsdprt/fsdprt.h"
#include "support/TestMatrices.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace fsdprt;
using test::matrix;
using testing::ExitedWithCode;
using testing::HasSubstr;
using testing::StartsWith;

namespace {

/// Which implementation runs a product.
enum class Path { Public, Onednn, OnednnJit, Openblas };

std::string name(Path path) {
  switch (path) {
  case Path::Public:
    return "Public";
  case Path::Onednn:
    return "Onednn";
  case Path::OnednnJit:
    return "OnednnJit";
  case Path::Openblas:
    return "Openblas";
  }
  return "";
}

std::string pathName(const testing::TestParamInfo<Path> &info) { return name(info.param); }

void PrintTo(Path path, std::ostream *out) { *out << name(path); }

/// The oneDNN kernels a path runs on, if it is one of oneDNN's.
std::optional<OnednnKernels> onednnKernels(Path path) {
  if (path == Path::Onednn)
    return OnednnKernels::F32Brgemm;
  if (path == Path::OnednnJit)
    return OnednnKernels::F32Jit;
  return std::nullopt;
}

/// Tests run once per path; oneDNN's are skipped where oneDNN has none of
/// their kernels for this CPU. Its brgemm takes only some products (rows
/// longer than the matrix's, for one, go to its jit gemm): on a oneDNN path
/// a product it declines must leave C as it was, and each test checks that
/// it took some.
class SgemmPaths : public testing::TestWithParam<Path> {
public:
  void SetUp() override {
    if (std::optional<OnednnKernels> kernels = onednnKernels(GetParam());
        kernels && !onednnKernel(*kernels))
      GTEST_SKIP() << "oneDNN has no such f32 matmul on this CPU (" << onednnVersionAndIsa()
                   << ")";
  }

  void TearDown() override {
    if (onednnKernels(GetParam()) && !IsSkipped()) {
      EXPECT_GT(taken, 0) << "oneDNN took none of the test's products";
    }
  }

  /// C = alpha * op(A) op(B) + beta * C through the path under test; false
  /// when oneDNN declined it (C is then checked to be untouched).
  bool run(const GemmBatch &p, float alpha, const float *a, const float *b, float beta, float *c) {
    const GemmShape &g = p.gemm;
    switch (GetParam()) {
    case Path::Public:
      if (p.batch == 1)
        fsdprt_sgemm(g.transA, g.transB, g.m, g.n, g.k, alpha, a, g.lda, b, g.ldb, beta, c, g.ldc);
      else
        fsdprt_sgemm_batched(g.transA, g.transB, p.batch, g.m, g.n, g.k, alpha, a, g.lda, p.strideA,
                             b, g.ldb, p.strideB, beta, c, g.ldc, p.strideC);
      return true;
    case Path::Onednn:
    case Path::OnednnJit: {
      int64_t size = (p.batch - 1) * p.strideC + (g.m - 1) * g.ldc + g.n;
      std::vector<float> before(c, c + size);
      if (onednnGemm(*onednnKernels(GetParam()), p, alpha, a, b, beta, c)) {
        ++taken;
        return true;
      }
      EXPECT_TRUE(std::equal(before.begin(), before.end(), c)) << "a declined product wrote C";
      return false;
    }
    case Path::Openblas:
      openblasSgemm(p, alpha, a, b, beta, c);
      return true;
    }
    return false;
  }

private:
  int taken = 0;
};

INSTANTIATE_TEST_SUITE_P(Sgemm, SgemmPaths,
                         testing::Values(Path::Public, Path::Onednn, Path::OnednnJit,
                                         Path::Openblas),
                         pathName);

TEST_P(SgemmPaths, AllTranspositionsTightAndPaddedRows) {
  const int64_t m = 5, n = 4, k = 3;
  for (int padded = 0; padded <= 1; ++padded)
    for (int transposes = 0; transposes < 4; ++transposes) {
      int ta = transposes & 1, tb = transposes >> 1;
      // Stored shapes: A is M x K (K x M transposed), B is K x N (N x K).
      int64_t aRows = ta ? k : m, aCols = ta ? m : k;
      int64_t bRows = tb ? n : k, bCols = tb ? k : n;
      int64_t lda = aCols + 2 * padded, ldb = bCols + padded, ldc = n + 3 * padded;
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
      if (run({GemmShape{ta, tb, m, n, k, lda, ldb, ldc}}, 2.0f, a.data(), b.data(), 0.5f,
              c.data())) {
        EXPECT_EQ(c, expected) << "trans_a " << ta << " trans_b " << tb << " padded " << padded;
      }
    }
}

TEST_P(SgemmPaths, BatchMatchesOneProductPerMatrix) {
  const int64_t batch = 3, m = 4, n = 5, k = 2;
  for (int gapped = 0; gapped <= 1; ++gapped)
    for (int transposes = 0; transposes < 4; ++transposes) {
      int ta = transposes & 1, tb = transposes >> 1;
      int64_t aRows = ta ? k : m, aCols = ta ? m : k;
      int64_t bRows = tb ? n : k, bCols = tb ? k : n;
      int64_t strideA = aRows * aCols + gapped, strideB = bRows * bCols + 2 * gapped,
              strideC = m * n + 3 * gapped;
      std::vector<float> a = matrix(batch * strideA, 1, 1, 1);
      std::vector<float> b = matrix(batch * strideB, 1, 1, 2);
      std::vector<float> c = matrix(batch * strideC, 1, 1, 3);
      std::vector<float> expected = c;
      GemmShape g{ta, tb, m, n, k, aCols, bCols, n};
      for (int64_t i = 0; i < batch; ++i)
        openblasSgemm({g}, 1.0f, a.data() + i * strideA, b.data() + i * strideB, 1.0f,
                      expected.data() + i * strideC);
      if (run({g, batch, strideA, strideB, strideC}, 1.0f, a.data(), b.data(), 1.0f, c.data())) {
        EXPECT_EQ(c, expected) << "trans_a " << ta << " trans_b " << tb << " gapped " << gapped;
      }
    }
}

TEST_P(SgemmPaths, BetaZeroIgnoresC) {
  std::vector<float> a = {1, 2}, b = {3, 4};
  std::vector<float> c = {std::numeric_limits<float>::quiet_NaN()};
  if (run({GemmShape{0, 0, 1, 1, 2, 2, 1, 1}}, 1.0f, a.data(), b.data(), 0.0f, c.data())) {
    EXPECT_EQ(c[0], 11.0f);
  }
}

/// Model-sized products of random values (rows longer than the matrix,
/// batches with gaps, beta != 0) against double: each element of a product
/// summed in f32 in any order is within gamma_(k+2) * (|alpha| sum_p |a_ip
/// b_pj| + |beta c_ij|) of the exact value, gamma_j = j u / (1 - j u), u =
/// 2^-24 (Higham, Accuracy and Stability of Numerical Algorithms, 3.1: k - 1
/// additions, one product, the scaling by alpha and the sum with beta * C).
TEST_P(SgemmPaths, RandomProductsWithinTheDotProductBound) {
  struct Case {
    int ta, tb;
    int64_t batch, m, n, k, pad;
  };
  const Case cases[] = {{0, 0, 1, 96, 80, 300, 0}, {1, 0, 1, 64, 72, 513, 0},
                        {0, 1, 3, 33, 40, 64, 0},  {1, 1, 2, 17, 130, 100, 0},
                        {1, 0, 1, 64, 72, 513, 3}, {0, 1, 3, 33, 40, 64, 1},
                        {1, 1, 2, 17, 130, 100, 5}};
  std::mt19937 random(7);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  const float alpha = 0.75f, beta = -1.25f;
  for (const Case &t : cases) {
    int64_t aRows = t.ta ? t.k : t.m, aCols = t.ta ? t.m : t.k;
    int64_t bRows = t.tb ? t.n : t.k, bCols = t.tb ? t.k : t.n;
    GemmShape g{t.ta, t.tb, t.m, t.n, t.k, aCols + t.pad, bCols + t.pad, t.n + t.pad};
    int64_t strideA = aRows * g.lda + t.pad, strideB = bRows * g.ldb + t.pad,
            strideC = t.m * g.ldc + t.pad;
    std::vector<float> a(t.batch * strideA), b(t.batch * strideB), c(t.batch * strideC);
    for (std::vector<float> *v : {&a, &b, &c})
      for (float &x : *v)
        x = uniform(random);
    std::vector<float> before = c;
    if (!run({g, t.batch, strideA, strideB, strideC}, alpha, a.data(), b.data(), beta, c.data()))
      continue;
    const double u = std::ldexp(1.0, -24), gamma = (t.k + 2) * u / (1 - (t.k + 2) * u);
    for (int64_t s = 0; s < t.batch; ++s)
      for (int64_t i = 0; i < t.m; ++i)
        for (int64_t j = 0; j < t.n; ++j) {
          double exact = 0, magnitude = 0;
          for (int64_t p = 0; p < t.k; ++p) {
            double x = t.ta ? a[s * strideA + p * g.lda + i] : a[s * strideA + i * g.lda + p];
            double y = t.tb ? b[s * strideB + j * g.ldb + p] : b[s * strideB + p * g.ldb + j];
            exact += x * y;
            magnitude += std::fabs(x * y);
          }
          double old = before[s * strideC + i * g.ldc + j];
          exact = alpha * exact + beta * old;
          double bound = gamma * (std::fabs(alpha) * magnitude + std::fabs(beta * old));
          ASSERT_LE(std::fabs(c[s * strideC + i * g.ldc + j] - exact), bound)
              << "batch " << s << " element (" << i << ", " << j << ") of " << t.m << "x" << t.n
              << "x" << t.k << " ta " << t.ta << " tb " << t.tb;
        }
    // Padding and gaps are never written.
    for (int64_t s = 0; s < t.batch; ++s)
      for (int64_t i = 0; i < strideC; ++i)
        if (i >= t.m * g.ldc || i % g.ldc >= t.n) {
          ASSERT_EQ(c[s * strideC + i], before[s * strideC + i]) << "written outside C";
        }
  }
}

TEST(Sgemm, EmptyProducts) {
  std::vector<float> c = {5, 6};
  // No rows: nothing to do, whatever the pointers.
  fsdprt_sgemm(0, 0, 0, 2, 3, 1.0f, nullptr, 3, nullptr, 2, 0.0f, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{5, 6}));
  // No inner dimension (which oneDNN does not take): C = beta * C.
  float a = 0, b = 0;
  fsdprt_sgemm(0, 0, 1, 2, 0, 1.0f, &a, 1, &b, 2, 0.5f, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{2.5f, 3}));
}

TEST(SgemmPath, VersionLineNamesThePath) {
  if (std::optional<std::string> kernel = onednnKernel(OnednnKernels::F32Brgemm)) {
    EXPECT_THAT(f32GemmLine(),
                StartsWith("f32 gemm: " + *kernel + "; padded rows, gapped batches: "));
    EXPECT_THAT(*kernel, HasSubstr("(brg:"));
  } else {
    EXPECT_THAT(f32GemmLine(), HasSubstr("; no brgemm f32 matmul in oneDNN 2."));
  }
}

TEST(SgemmPath, AnAvx512CpuUsesOnednn) {
  if (!test::hasAvx512Core() || test::isaCappedBelowAvx512())
    GTEST_SKIP() << "no avx512_core here (or DNNL_MAX_CPU_ISA caps it): " << onednnVersionAndIsa();
  EXPECT_TRUE(onednnKernel(OnednnKernels::F32Brgemm).has_value()) << onednnVersionAndIsa();
}

TEST(SgemmPath, CappedIsaFallsBack) {
  if (!test::isaCappedBelowAvx512())
    GTEST_SKIP() << "DNNL_MAX_CPU_ISA is not set to an ISA below avx512_core "
                    "(ctest runs "
                    "fsdprt-tests.gemm-fallback with DNNL_MAX_CPU_ISA=AVX2)";
  EXPECT_FALSE(onednnKernel(OnednnKernels::F32Brgemm).has_value()) << onednnVersionAndIsa();
  EXPECT_THAT(f32GemmLine(), HasSubstr("; no brgemm f32 matmul in oneDNN "));
  float one = 1.0f, c = 0;
  EXPECT_FALSE(onednnGemm(OnednnKernels::F32Brgemm, {GemmShape{0, 0, 1, 1, 1, 1, 1, 1}}, 1.0f,
                          &one, &one, 0.0f, &c));
  fsdprt_sgemm(0, 0, 1, 1, 1, 3.0f, &one, 1, &one, 1, 0.0f, &c, 1);
  EXPECT_EQ(c, 3.0f);
}

/// Where OpenBLAS runs a generic core (fsdprt-tests.gemm-no-bf16 forces
/// Prescott's), the products brgemm does not take go to oneDNN's gemm:jit,
/// and the version line says so; elsewhere to OpenBLAS. A padded-row
/// product of random values shows which: the public entry point's result is
/// bit for bit the one of the path the rule names (the same kernel, the same
/// order of sums), which another kernel's sums would not give.
TEST(SgemmPath, ProductsBrgemmDeclinesFollowTheRule) {
  bool aroundOpenblas = openblasCoreIsGeneric() && onednnKernel(OnednnKernels::F32Jit);
  EXPECT_THAT(f32GemmLine(), HasSubstr(aroundOpenblas ? "(gemm:jit), OpenBLAS's core "
                                                      : "OpenBLAS sgemm, core "));
  const int64_t m = 48, n = 40, k = 300, ld = k + 7;
  std::mt19937 random(11);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> a(m * ld), b(k * n), viaRule(m * n, 0.0f), viaPublic(m * n, 0.0f);
  for (std::vector<float> *v : {&a, &b})
    for (float &x : *v)
      x = uniform(random);
  GemmBatch padded{GemmShape{0, 0, m, n, k, ld, n, n}};
  ASSERT_FALSE(onednnGemm(OnednnKernels::F32Brgemm, padded, 1.0f, a.data(), b.data(), 0.0f,
                          viaRule.data()))
      << "brgemm took a product with padded rows: the test needs one it declines";
  if (aroundOpenblas) {
    ASSERT_TRUE(onednnGemm(OnednnKernels::F32Jit, padded, 1.0f, a.data(), b.data(), 0.0f,
                           viaRule.data()));
  } else {
    openblasSgemm(padded, 1.0f, a.data(), b.data(), 0.0f, viaRule.data());
  }
  fsdprt_sgemm(0, 0, m, n, k, 1.0f, a.data(), ld, b.data(), n, 0.0f, viaPublic.data(), n);
  EXPECT_EQ(viaPublic, viaRule);
}

TEST(SgemmError, StrideTooSmall) {
  std::vector<float> a(6), b(6), c(4);
  EXPECT_EXIT(fsdprt_sgemm(0, 0, 2, 2, 3, 1.0f, a.data(), 2, b.data(), 2, 0.0f, c.data(), 2),
              ExitedWithCode(1),
              HasSubstr("trainer: error: fsdprt_sgemm: lda = 2 is smaller than "
                        "the row length 3"));
  EXPECT_EXIT(fsdprt_sgemm(0, 1, 2, 2, 3, 1.0f, a.data(), 3, b.data(), 2, 0.0f, c.data(), 2),
              ExitedWithCode(1),
              HasSubstr("fsdprt_sgemm: ldb = 2 is smaller than the row length 3"));
}

TEST(SgemmError, NegativeOrHugeDimensions) {
  float x = 0;
  EXPECT_EXIT(fsdprt_sgemm(0, 0, -1, 1, 1, 1.0f, &x, 1, &x, 1, 0.0f, &x, 1), ExitedWithCode(1),
              HasSubstr("fsdprt_sgemm: m = -1 is negative or too large for BLAS"));
  EXPECT_EXIT(
      fsdprt_sgemm(0, 0, 1, 1, int64_t(1) << 40, 1.0f, &x, int64_t(1) << 40, &x, 1, 0.0f, &x, 1),
      ExitedWithCode(1),
      HasSubstr("fsdprt_sgemm: k = 1099511627776 is negative or too large for BLAS"));
}

TEST(SgemmError, BatchedStrides) {
  std::vector<float> a(16), b(16), c(16);
  EXPECT_EXIT(fsdprt_sgemm_batched(0, 0, 2, 2, 2, 2, 1.0f, a.data(), 2, 3, b.data(), 2, 4, 0.0f,
                                   c.data(), 2, 4),
              ExitedWithCode(1),
              HasSubstr("trainer: error: fsdprt_sgemm: stride_a = 3 is smaller than"));
}

} // namespace
