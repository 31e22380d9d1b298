//===- DTypeTest.cpp - Element types and rounding -------------------------===//

#include "abi/DType.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

using namespace fsdprt;

namespace {

TEST(DType, NamesAndSizes) {
  EXPECT_EQ(parseDType("f32"), DType::F32);
  EXPECT_EQ(parseDType("bf16"), DType::BF16);
  EXPECT_EQ(parseDType("i32"), DType::I32);
  EXPECT_EQ(parseDType("i64"), DType::I64);
  EXPECT_EQ(parseDType("f16"), std::nullopt);
  EXPECT_EQ(dtypeSize(DType::F32), 4u);
  EXPECT_EQ(dtypeSize(DType::BF16), 2u);
  EXPECT_EQ(dtypeSize(DType::I32), 4u);
  EXPECT_EQ(dtypeSize(DType::I64), 8u);
  EXPECT_STREQ(dtypeName(DType::BF16), "bf16");
  EXPECT_TRUE(isFloatDType(DType::BF16));
  EXPECT_FALSE(isFloatDType(DType::I64));
}

TEST(BF16, ExactValues) {
  EXPECT_EQ(roundToBF16(0.0), 0x0000);
  EXPECT_EQ(roundToBF16(-0.0), 0x8000);
  EXPECT_EQ(roundToBF16(1.0), 0x3F80);
  EXPECT_EQ(roundToBF16(-2.0), 0xC000);
  EXPECT_EQ(roundToBF16(1.0 + 1.0 / 128), 0x3F81);
  EXPECT_EQ(bf16ToDouble(0x3F81), 1.0 + 1.0 / 128);
}

TEST(BF16, RoundsToNearestEven) {
  // Halfway between 1 and 1 + 2^-7: to the even one, 1.
  EXPECT_EQ(roundToBF16(1.0 + 1.0 / 256), 0x3F80);
  // Halfway between 1 + 2^-7 and 1 + 2^-6: to the even one, 1 + 2^-6.
  EXPECT_EQ(roundToBF16(1.0 + 3.0 / 256), 0x3F82);
  // Just above halfway: up.
  EXPECT_EQ(roundToBF16(1.0 + 1.0 / 256 + std::ldexp(1.0, -40)), 0x3F81);
  // Just below: down.
  EXPECT_EQ(roundToBF16(1.0 + 1.0 / 256 - std::ldexp(1.0, -40)), 0x3F80);
}

TEST(BF16, RoundsFromDoubleDirectly) {
  // Via float this would round twice: 1 + 2^-8 + 2^-30 becomes the float
  // 1 + 2^-8 (a bf16 tie, rounded down to 1), but the double is above the tie.
  double value = 1.0 + 1.0 / 256 + std::ldexp(1.0, -30);
  EXPECT_EQ(static_cast<double>(static_cast<float>(value)), 1.0 + 1.0 / 256);
  EXPECT_EQ(roundToBF16(value), 0x3F81);
  EXPECT_EQ(roundToBF16(-value), 0xBF81);
}

TEST(BF16, SpecialValues) {
  EXPECT_EQ(roundToBF16(std::numeric_limits<double>::infinity()), 0x7F80);
  EXPECT_EQ(roundToBF16(-std::numeric_limits<double>::infinity()), 0xFF80);
  EXPECT_EQ(roundToBF16(1e300), 0x7F80);
  EXPECT_EQ(roundToBF16(3.4e38), 0x7F80); // above the largest bf16 (3.39e38) by more than half
  EXPECT_EQ(roundToBF16(3.38e38), 0x7F7E);
  EXPECT_TRUE(std::isnan(bf16ToDouble(roundToBF16(std::nan("")))));
  // Smallest bf16 subnormal is 2^-133; half of it is a tie that goes to 0.
  EXPECT_EQ(roundToBF16(std::ldexp(1.0, -133)), 0x0001);
  EXPECT_EQ(roundToBF16(std::ldexp(1.0, -134)), 0x0000);
  EXPECT_EQ(roundToBF16(std::ldexp(1.0, -134) * 1.01), 0x0001);
  EXPECT_EQ(roundToBF16(1e-300), 0x0000);
}

#if defined(__x86_64__)
extern "C" float __truncsfbf2(float value);

/// The bits of the bf16 that __truncsfbf2 returns in a float's low 16 bits.
uint16_t truncsfbf2Bits(float value) {
  float result = __truncsfbf2(value);
  uint32_t bits;
  std::memcpy(&bits, &result, sizeof(bits));
  EXPECT_EQ(bits >> 16, 0u);
  return static_cast<uint16_t>(bits);
}

// The compiler-runtime builtin LLVM calls where libgcc lacks it
// (lib/abi/CompilerBuiltins.cpp): the same rounding as the trainer's stores.
TEST(BF16, CompilerBuiltinRoundsAsStores) {
  for (float value : {1.0f, -2.5f, 1.0f + 0x1p-8f, 1.0f + 0x1p-8f + 0x1p-20f, 1.0f + 0x3p-8f,
                      std::numeric_limits<float>::infinity(), 1e-40f})
    EXPECT_EQ(truncsfbf2Bits(value), floatToBF16(value)) << value;
  EXPECT_EQ(truncsfbf2Bits(1.0f + 0x1p-8f), 0x3F80);  // a tie, to even
  EXPECT_EQ(truncsfbf2Bits(1.0f + 0x3p-8f), 0x3F82);  // a tie, up to even
  EXPECT_EQ(truncsfbf2Bits(std::numeric_limits<float>::quiet_NaN()) & 0x7FC0, 0x7FC0);
}
#endif

TEST(Store, RealsAndIntegersRoundTrip) {
  unsigned char buffer[8];
  storeReal(0.1, DType::F32, buffer);
  float single;
  std::memcpy(&single, buffer, 4);
  EXPECT_EQ(single, 0.1f);
  EXPECT_EQ(loadReal(DType::F32, buffer), static_cast<double>(0.1f));
  storeReal(1.0 + 1.0 / 128, DType::BF16, buffer);
  EXPECT_EQ(loadReal(DType::BF16, buffer), 1.0 + 1.0 / 128);
  storeInteger(-5, DType::I32, buffer);
  EXPECT_EQ(loadInteger(DType::I32, buffer), -5);
  storeInteger(int64_t(1) << 40, DType::I64, buffer);
  EXPECT_EQ(loadInteger(DType::I64, buffer), int64_t(1) << 40);
}

} // namespace
