//===- PhiloxTest.cpp - Philox4x32-10, FNV-1a and the transforms ----------===//

#include "trainer/Philox.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace fsdprt;

namespace {

// Known-answer vectors of Random123 (kat_vectors, philox4x32 10 rounds).
TEST(Philox, KnownAnswerZero) {
  PhiloxBlock out = philox4x32_10({0, 0, 0, 0}, {0, 0});
  EXPECT_EQ(out, (PhiloxBlock{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
}

TEST(Philox, KnownAnswerAllOnes) {
  PhiloxBlock out =
      philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff});
  EXPECT_EQ(out, (PhiloxBlock{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
}

TEST(Philox, KnownAnswerPi) {
  PhiloxBlock out = philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                                  {0xa4093822, 0x299f31d0});
  EXPECT_EQ(out, (PhiloxBlock{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

// Test vectors of the FNV reference (draft-eastlake-fnv, FNV-1a 64).
TEST(Fnv1a, KnownValues) {
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ULL);
}

TEST(Fnv1a, HashesBytesNotCharacters) {
  // UTF-8 bytes above 0x7f must not be sign-extended.
  EXPECT_EQ(fnv1a64("\xc3\xa9"), (((0xcbf29ce484222325ULL ^ 0xc3) * 0x100000001b3ULL) ^ 0xa9) *
                                     0x100000001b3ULL);
}

TEST(Uniform, Endpoints) {
  EXPECT_EQ(uniformFromWords(0, 0), 0.5 / 9007199254740992.0);
  // The top bits only: the low 5 bits of a and 6 bits of b are dropped.
  EXPECT_EQ(uniformFromWords(31, 63), uniformFromWords(0, 0));
  EXPECT_EQ(uniformFromWords(32, 0), (67108864.0 + 0.5) / 9007199254740992.0);
  EXPECT_EQ(uniformFromWords(0, 64), 1.5 / 9007199254740992.0);
  // The contract's formula, evaluated in double, rounds its largest value to 1.
  EXPECT_EQ(uniformFromWords(0xffffffff, 0xffffffff), 1.0);
  EXPECT_LT(uniformFromWords(0xffffffff, 0xffffff00), 1.0);
}

TEST(Normal, BoxMullerFirstOutput) {
  // u1 = 0.5 + 2^-54 (a = 2^31, b = 0), u2 = 0.25 + 2^-54 (a = 2^30, b = 0).
  PhiloxBlock w{0x80000000u, 0, 0x40000000u, 0};
  double u1 = uniform1(w), u2 = uniform2(w);
  EXPECT_DOUBLE_EQ(u1, 0.5);
  EXPECT_DOUBLE_EQ(u2, 0.25);
  EXPECT_EQ(standardNormal(w), std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2));
  EXPECT_NEAR(standardNormal(w), 0.0, 1e-7);
}

TEST(Normal, MomentsOfManyDraws) {
  const int count = 200000;
  double sum = 0, sumSquares = 0;
  for (uint32_t i = 0; i < count; ++i) {
    double z = standardNormal(philox4x32_10({i, 0, 7, 0}, {42, 0}));
    sum += z;
    sumSquares += z * z;
  }
  double mean = sum / count;
  double variance = sumSquares / count - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.015);
  EXPECT_NEAR(variance, 1.0, 0.02);
}

} // namespace
