//===- Bf16GemmTest.cpp - fsdprt_gemm_bf16 on the CPU ---------------------===//
//
// Both ways a bf16 product runs on the CPU (Bf16Gemm.h) against a product
// computed in double from the same bf16 values: oneDNN's bf16 matmul on bf16
// instructions (skipped, with a message, where the CPU has none) and the
// fallback that widens to f32 for the f32 products' kernels, each called
// directly, and the public entry points, whichever way they go. ctest runs
// this suite again with DNNL_MAX_CPU_ISA=AVX2 and =AVX512_CORE_VNNI, where
// oneDNN has no bf16 instructions and the entry points must widen
// (test/CMakeLists.txt: fsdprt-tests.gemm-fallback, fsdprt-tests.gemm-no-bf16).
//
//===----------------------------------------------------------------------===//

#include "abi/DType.h"
#include "cpu/Bf16Gemm.h"
#include "cpu/OnednnIsa.h"
#include "fsdprt/fsdprt.h"

#include <cblas.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace fsdprt;
using testing::ExitedWithCode;
using testing::HasSubstr;
using testing::StartsWith;

namespace {

/// A NaN that no product writes: what C holds where it must not be written.
constexpr uint16_t kUntouched = 0x7FA5;

/// Which implementation runs a product.
enum class Path { Public, Onednn, Widened };

std::string name(Path path) {
  switch (path) {
  case Path::Public:
    return "Public";
  case Path::Onednn:
    return "Onednn";
  case Path::Widened:
    return "Widened";
  }
  return "";
}

std::string pathName(const testing::TestParamInfo<Path> &info) { return name(info.param); }

void PrintTo(Path path, std::ostream *out) { *out << name(path); }

/// Tests run once per path; the oneDNN one is skipped where oneDNN has no
/// bf16 instructions for this CPU (no AVX512-BF16, or DNNL_MAX_CPU_ISA
/// capping it).
class Bf16GemmPaths : public testing::TestWithParam<Path> {
public:
  void SetUp() override {
    if (GetParam() == Path::Onednn && !onednnKernel(OnednnKernels::Bf16Native))
      GTEST_SKIP() << "oneDNN has no bf16 instructions on this CPU (" << onednnVersionAndIsa()
                   << "): only the fallback runs here";
  }

  /// C = alpha * op(A) op(B) + beta * C through the path under test.
  void run(const GemmBatch &p, float alpha, const uint16_t *a, const uint16_t *b, float beta,
           uint16_t *c) {
    const GemmShape &g = p.gemm;
    switch (GetParam()) {
    case Path::Public:
      if (p.batch == 1)
        fsdprt_gemm_bf16(g.transA, g.transB, g.m, g.n, g.k, alpha, a, g.lda, b, g.ldb, beta, c,
                         g.ldc);
      else
        fsdprt_gemm_bf16_batched(g.transA, g.transB, p.batch, g.m, g.n, g.k, alpha, a, g.lda,
                                 p.strideA, b, g.ldb, p.strideB, beta, c, g.ldc, p.strideC);
      return;
    case Path::Onednn:
      ASSERT_TRUE(onednnGemm(OnednnKernels::Bf16Native, p, alpha, a, b, beta, c))
          << "oneDNN has a bf16 matmul here, but not for this product";
      return;
    case Path::Widened:
      widenedGemmBf16(p, alpha, a, b, beta, c);
      return;
    }
  }
};

INSTANTIATE_TEST_SUITE_P(Bf16Gemm, Bf16GemmPaths,
                         testing::Values(Path::Public, Path::Onednn, Path::Widened), pathName);

/// One product (or batch) to check: op(A) is m x k, op(B) k x n; each row is
/// `pad` elements longer than the matrix's, each matrix of a batch `gap`
/// elements past the end of the previous one.
struct Case {
  int ta, tb;
  int64_t m, n, k;
  float alpha, beta;
  int64_t batch = 1;
  int64_t pad = 0;
  int64_t gap = 0;
};

std::string describe(const Case &c) {
  return "trans_a " + std::to_string(c.ta) + " trans_b " + std::to_string(c.tb) + " " +
         std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k) + " alpha " +
         std::to_string(c.alpha) + " beta " + std::to_string(c.beta) + " batch " +
         std::to_string(c.batch) + " pad " + std::to_string(c.pad);
}

/// gamma(n) = n u / (1 - n u): the relative error bound of n roundings with
/// unit roundoff u (Higham, Accuracy and Stability of Numerical Algorithms,
/// lemma 3.1).
double gamma(int64_t n, double u) { return n * u / (1 - n * u); }

double bf16Nearest(double x) { return bf16ToDouble(roundToBF16(x)); }

/// Runs `c` with bf16 values drawn from [-1, 1) and checks every element of C.
///
/// The bound. The exact result is v = alpha * sum_p a_p b_p + beta * c. Each
/// product of two bf16 values (8 significant bits each) is exact in f32 (24).
/// The implementation sums the k products in f32 in an order of its own (a
/// loop, blocks of K, pairs of a dot-product instruction): any summation tree
/// of k terms rounds each term at most k - 1 times, so |s' - s| <=
/// gamma(k - 1) sum |a_p b_p|. alpha * s', beta * c and their sum add at most
/// three roundings: the f32 value f before the store satisfies
///   |f - v| <= gamma(k + 2) (|alpha| sum |a_p b_p| + |beta c|),  u = 2^-24.
/// The reference v is summed in double, off by at most gamma(k + 3) of the
/// same magnitude with u = 2^-53; both terms make the bound e. The stored
/// value must be f rounded to bf16 to nearest even, and rounding is monotone,
/// so it lies between bf16(v - e) and bf16(v + e): most often they are one
/// bf16 value and the check is exact; where v is near the midpoint of two
/// bf16 neighbours, either is allowed. A store that truncates, or rounds
/// twice, or an accumulation in bf16, falls outside.
void check(Bf16GemmPaths &test, const Case &c, uint64_t seed) {
  SCOPED_TRACE(describe(c));
  std::mt19937_64 generator(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  int64_t aRows = c.ta ? c.k : c.m, aCols = c.ta ? c.m : c.k;
  int64_t bRows = c.tb ? c.n : c.k, bCols = c.tb ? c.k : c.n;
  GemmBatch p{GemmShape{c.ta, c.tb, c.m, c.n, c.k, aCols + c.pad, bCols + c.pad, c.n + c.pad},
              c.batch, 0, 0, 0};
  const GemmShape &g = p.gemm;
  p.strideA = aRows * g.lda + c.gap;
  p.strideB = bRows * g.ldb + c.gap;
  p.strideC = c.m * g.ldc + c.gap;
  // Padding and gaps of A and B hold NaN, which a product that read them
  // would show; C's hold a NaN that must survive.
  uint16_t nan = roundToBF16(NAN);
  std::vector<uint16_t> a(c.batch * p.strideA, nan), b(c.batch * p.strideB, nan),
      out(c.batch * p.strideC, kUntouched);
  auto at = [](int64_t batch, int64_t stride, int64_t i, int64_t ld, int64_t j) {
    return batch * stride + i * ld + j;
  };
  for (int64_t l = 0; l < c.batch; ++l) {
    for (int64_t i = 0; i < aRows; ++i)
      for (int64_t j = 0; j < aCols; ++j)
        a[at(l, p.strideA, i, g.lda, j)] = roundToBF16(uniform(generator));
    for (int64_t i = 0; i < bRows; ++i)
      for (int64_t j = 0; j < bCols; ++j)
        b[at(l, p.strideB, i, g.ldb, j)] = roundToBF16(uniform(generator));
    // C is not read when beta is 0: NaN there must not reach the result.
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j)
        out[at(l, p.strideC, i, g.ldc, j)] = c.beta == 0 ? nan : roundToBF16(uniform(generator));
  }
  std::vector<uint16_t> before = out;
  test.run(p, c.alpha, a.data(), b.data(), c.beta, out.data());
  if (testing::Test::HasFatalFailure())
    return;

  std::vector<bool> written(out.size(), false);
  int failures = 0;
  for (int64_t l = 0; l < c.batch; ++l)
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        double sum = 0, magnitude = 0;
        for (int64_t q = 0; q < c.k; ++q) {
          double x =
              bf16ToDouble(a[c.ta ? at(l, p.strideA, q, g.lda, i) : at(l, p.strideA, i, g.lda, q)]);
          double y =
              bf16ToDouble(b[c.tb ? at(l, p.strideB, j, g.ldb, q) : at(l, p.strideB, q, g.ldb, j)]);
          sum += x * y;
          magnitude += std::fabs(x * y);
        }
        int64_t index = at(l, p.strideC, i, g.ldc, j);
        double exact = c.alpha * sum;
        magnitude *= std::fabs(c.alpha);
        if (c.beta != 0) {
          double old = bf16ToDouble(before[index]);
          exact += c.beta * old;
          magnitude += std::fabs(c.beta * old);
        }
        double bound = gamma(c.k + 2, 0x1p-24) * magnitude + gamma(c.k + 3, 0x1p-53) * magnitude;
        double low = bf16Nearest(exact - bound), high = bf16Nearest(exact + bound);
        double got = bf16ToDouble(out[index]);
        written[index] = true;
        if (!(low <= got && got <= high) && ++failures <= 10)
          ADD_FAILURE() << "C[" << l << "][" << i << "][" << j << "] = " << got << ", want "
                        << exact << " rounded to bf16: " << low
                        << (low == high ? "" : " to " + std::to_string(high));
      }
  EXPECT_EQ(failures, 0) << "elements outside the bound";
  for (size_t index = 0; index < out.size(); ++index) {
    if (!written[index]) {
      ASSERT_EQ(out[index], kUntouched)
          << "C's padding or gap at element " << index << " was written";
    }
  }
}

TEST_P(Bf16GemmPaths, EveryTransposeWithPaddedRows) {
  uint64_t seed = 1;
  for (int ta = 0; ta <= 1; ++ta)
    for (int tb = 0; tb <= 1; ++tb) {
      check(*this, {ta, tb, 65, 33, 129, 1.0f, 0.0f, 1, /*pad=*/3}, seed++);
      check(*this, {ta, tb, 7, 13, 5, 1.0f, 0.0f, 1, /*pad=*/1}, seed++);
    }
}

TEST_P(Bf16GemmPaths, TightRows) {
  uint64_t seed = 10;
  for (int ta = 0; ta <= 1; ++ta)
    for (int tb = 0; tb <= 1; ++tb)
      check(*this, {ta, tb, 48, 40, 64, 1.0f, 0.0f}, seed++);
}

TEST_P(Bf16GemmPaths, OddSizes) {
  check(*this, {0, 0, 1, 1, 1, 1.0f, 0.0f}, 20);
  check(*this, {0, 0, 7, 13, 5, 1.0f, 0.0f}, 21);
  check(*this, {0, 0, 65, 33, 129, 1.0f, 0.0f}, 22);
  check(*this, {1, 1, 65, 33, 129, 1.0f, 0.0f, 1, /*pad=*/5}, 23);
}

TEST_P(Bf16GemmPaths, AlphaAndBeta) {
  uint64_t seed = 30;
  // alpha 0.75 and -1.3 times a bf16 value is not a bf16 value: scaling A or
  // B by alpha before the products would round.
  for (float alpha : {1.0f, 0.75f, -1.3f})
    for (float beta : {0.0f, 1.0f, 0.5f})
      for (int t = 0; t < 4; ++t)
        check(*this, {t & 1, t >> 1, 33, 17, 40, alpha, beta, 1, /*pad=*/t}, seed++);
}

TEST_P(Bf16GemmPaths, LongSums) {
  check(*this, {0, 0, 16, 24, 4096, 1.0f, 0.0f}, 40);
  check(*this, {1, 0, 16, 24, 4096, 0.75f, 1.0f, 1, /*pad=*/2}, 41);
  check(*this, {0, 1, 16, 24, 4096, 1.0f, 0.5f}, 42);
}

TEST_P(Bf16GemmPaths, Batched) {
  uint64_t seed = 50;
  for (int t = 0; t < 4; ++t) {
    // Matrices packed back to back, then with gaps and padded rows.
    check(*this, {t & 1, t >> 1, 17, 9, 33, 1.0f, 0.0f, 3}, seed++);
    check(*this, {t & 1, t >> 1, 17, 9, 33, 0.75f, 1.0f, 3, /*pad=*/2, /*gap=*/7}, seed++);
  }
  check(*this, {0, 1, 3, 2, 4, 1.5f, 0.0f, 3, 0, /*gap=*/4}, seed++);
  check(*this, {0, 0, 64, 64, 64, 1.0f, 0.5f, 8}, seed++);
}

TEST_P(Bf16GemmPaths, SmallIntegersAreExact) {
  for (int ta = 0; ta <= 1; ++ta)
    for (int tb = 0; tb <= 1; ++tb) {
      int counter = 0;
      // Sums stay below 256: every value is a bf16.
      auto value = [&] { return roundToBF16((counter++ * 7) % 11 - 5); };
      const int64_t m = 5, n = 4, k = 3;
      std::vector<uint16_t> a(m * k), b(k * n), c(m * n);
      for (std::vector<uint16_t> *matrix : {&a, &b, &c})
        for (uint16_t &x : *matrix)
          x = value();
      std::vector<uint16_t> before = c;
      run({GemmShape{ta, tb, m, n, k, ta ? m : k, tb ? k : n, n}}, 2.0f, a.data(), b.data(), -1.0f,
          c.data());
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double want = -bf16ToDouble(before[i * n + j]);
          for (int64_t q = 0; q < k; ++q)
            want += 2 * bf16ToDouble(a[ta ? q * m + i : i * k + q]) *
                    bf16ToDouble(b[tb ? j * k + q : q * n + j]);
          EXPECT_EQ(bf16ToDouble(c[i * n + j]), want)
              << "trans_a " << ta << " trans_b " << tb << " element " << i << ", " << j;
        }
    }
}

TEST_P(Bf16GemmPaths, StoresRoundToNearestEven) {
  // C = alpha * 1 * 1: what storing alpha in C rounds to.
  auto stored = [&](float alpha) {
    uint16_t one = roundToBF16(1.0), c = 0;
    run({GemmShape{0, 0, 1, 1, 1, 1, 1, 1}}, alpha, &one, &one, 0.0f, &c);
    return bf16ToDouble(c);
  };
  // Between 1 and 1 + 2^-7, the bf16 neighbours of 1.
  EXPECT_EQ(stored(1.0f + 0x1p-8f), 1.0) << "a tie goes to the even mantissa";
  EXPECT_EQ(stored(1.0f + 0x1p-8f + 0x1p-20f), 1.0 + 0x1p-7) << "above the tie";
  EXPECT_EQ(stored(1.0f + 0x1p-9f), 1.0) << "below the tie";
  EXPECT_EQ(stored(1.0f + 3 * 0x1p-8f), 1.0 + 0x1p-6) << "a tie from an odd mantissa goes up";
  EXPECT_EQ(stored(-1.0f - 0x1p-8f), -1.0);
  EXPECT_TRUE(std::isinf(stored(std::numeric_limits<float>::max())));
}

TEST_P(Bf16GemmPaths, SumRoundsOnce) {
  // 1 * 1 + beta * 1 with beta = 2^-8 + 2^-16: exactly 1 + 2^-8 + 2^-16 in
  // f32, which rounds up to 1 + 2^-7. Rounding alpha * sum, or beta * C, to
  // bf16 first would give 1.
  uint16_t one = roundToBF16(1.0), c = roundToBF16(1.0);
  run({GemmShape{0, 0, 1, 1, 1, 1, 1, 1}}, 1.0f, &one, &one, 0x1p-8f + 0x1p-16f, &c);
  EXPECT_EQ(bf16ToDouble(c), 1.0 + 0x1p-7);
}

TEST_P(Bf16GemmPaths, BetaZeroIgnoresC) {
  uint16_t a[2] = {roundToBF16(1.0), roundToBF16(2.0)};
  uint16_t b[2] = {roundToBF16(3.0), roundToBF16(4.0)};
  uint16_t c = roundToBF16(NAN);
  run({GemmShape{0, 0, 1, 1, 2, 2, 1, 1}}, 1.0f, a, b, 0.0f, &c);
  EXPECT_EQ(bf16ToDouble(c), 11.0);
}

TEST(Bf16Gemm, EmptySumScalesC) {
  // k = 0 (which oneDNN does not take): C = beta * C, and 0 when beta is 0.
  uint16_t c[2] = {roundToBF16(3.0), roundToBF16(NAN)};
  fsdprt_gemm_bf16(0, 0, 1, 1, 0, 1.0f, nullptr, 1, nullptr, 1, 0.5f, c, 1);
  EXPECT_EQ(bf16ToDouble(c[0]), 1.5);
  fsdprt_gemm_bf16(0, 0, 1, 1, 0, 1.0f, nullptr, 1, nullptr, 1, 0.0f, c + 1, 1);
  EXPECT_EQ(bf16ToDouble(c[1]), 0.0);
}

TEST(Bf16GemmPath, VersionLineNamesThePath) {
  if (std::optional<std::string> kernel = onednnKernel(OnednnKernels::Bf16Native))
    EXPECT_EQ(bf16GemmLine(), "bf16 gemm: " + *kernel + ": bf16 instructions");
  else
    EXPECT_THAT(bf16GemmLine(),
                StartsWith("bf16 gemm: widened to f32 for the f32 products' kernels, C rounded "
                           "once (oneDNN "));
  EXPECT_THAT(onednnVersionAndIsa(), StartsWith("oneDNN 2."));
}

TEST(Bf16GemmPath, NativeWhereTheCpuHasBf16Instructions) {
  EXPECT_EQ(onednnHasNativeBf16(), test::expectsNativeBf16()) << onednnVersionAndIsa();
  EXPECT_EQ(onednnKernel(OnednnKernels::Bf16Native).has_value(), test::expectsNativeBf16())
      << onednnVersionAndIsa();
}

TEST(Bf16GemmPath, NeverEmulated) {
  // What fsdprt-tests.gemm-fallback and fsdprt-tests.gemm-no-bf16 check:
  // without bf16 instructions (oneDNN's own switch takes them away on any
  // CPU) oneDNN is not asked, not even on avx512_core where it would emulate
  // them, and the entry points still give the bf16 product.
  if (test::expectsNativeBf16())
    GTEST_SKIP() << "oneDNN has bf16 instructions here (ctest runs fsdprt-tests.gemm-no-bf16 "
                    "with DNNL_MAX_CPU_ISA=AVX512_CORE_VNNI)";
  EXPECT_FALSE(onednnKernel(OnednnKernels::Bf16Native).has_value()) << onednnVersionAndIsa();
  EXPECT_THAT(bf16GemmLine(), HasSubstr(": no bf16 instructions)"));
  uint16_t one = roundToBF16(1.0), c = 0;
  EXPECT_FALSE(onednnGemm(OnednnKernels::Bf16Native, {GemmShape{0, 0, 1, 1, 1, 1, 1, 1}}, 1.0f,
                          &one, &one, 0.0f, &c));
  fsdprt_gemm_bf16(0, 0, 1, 1, 1, 3.0f, &one, 1, &one, 1, 0.0f, &c, 1);
  EXPECT_EQ(bf16ToDouble(c), 3.0);
}

TEST(Bf16GemmPath, OnednnRunsOpenblasThreadCount) {
  if (!onednnKernel(OnednnKernels::Bf16Native))
    GTEST_SKIP() << "oneDNN has no bf16 instructions on this CPU (" << onednnVersionAndIsa()
                 << ")";
  int threads = openblas_get_num_threads();
  uint16_t one = roundToBF16(1.0), c = 0;
  for (int wanted : {1, threads}) {
    openblas_set_num_threads(wanted);
    ASSERT_TRUE(onednnGemm(OnednnKernels::Bf16Native, {GemmShape{0, 0, 1, 1, 1, 1, 1, 1}}, 1.0f,
                           &one, &one, 0.0f, &c));
    EXPECT_EQ(omp_get_max_threads(), wanted) << "oneDNN's OpenMP threads follow OpenBLAS's";
  }
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
              HasSubstr("fsdprt_gemm_bf16: m = 2147483648 is negative or too "
                        "large for BLAS"));
}

TEST(Bf16GemmError, BatchedStrides) {
  std::vector<uint16_t> a(16), b(16), c(16);
  EXPECT_EXIT(fsdprt_gemm_bf16_batched(0, 0, 2, 2, 2, 2, 1.0f, a.data(), 2, 3, b.data(), 2, 4, 0.0f,
                                       c.data(), 2, 4),
              ExitedWithCode(1), HasSubstr("trainer: error: fsdprt_gemm_bf16_batched:"));
  EXPECT_EXIT(fsdprt_gemm_bf16_batched(0, 0, 2, 2, 2, 3, 1.0f, a.data(), 2, 8, b.data(), 2, 8, 0.0f,
                                       c.data(), 2, 8),
              ExitedWithCode(1),
              HasSubstr("trainer: error: fsdprt_gemm_bf16_batched: lda = 2 is "
                        "smaller than the "
                        "row length 3"));
}

} // namespace
