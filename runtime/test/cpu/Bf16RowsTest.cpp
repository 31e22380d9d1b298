//===- Bf16RowsTest.cpp - Vectorised bf16 rows against the scalar rules ----===//
//
// The row conversions of the widened bf16 products (Bf16Rows.h) give the
// bits of abi/DType.h's scalar conversions for every class of value: the
// ties of rounding to nearest even, the largest finite values (which round
// to infinity), subnormals, infinities and NaNs (kept quiet, with their sign
// and top bits), and random bit patterns; at every length, so that the
// vector loop's tail runs too. Breaking the tie rule or the NaN select makes
// it fail.
//
//===----------------------------------------------------------------------===//

#include "abi/DType.h"
#include "cpu/Bf16Rows.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

using namespace fsdprt;

namespace {

float fromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

/// Bit patterns of every class a product's C can hold, then random ones.
std::vector<uint32_t> patterns() {
  std::vector<uint32_t> bits = {
      0x00000000u, 0x80000000u,             // zeros
      0x3F808000u, 0x3F818000u,             // ties from an even and an odd mantissa
      0x3F808001u, 0x3F807FFFu,             // just above and below a tie
      0x7F7FFFFFu, 0xFF7FFFFFu,             // the largest finite: round to infinity
      0x7F7F7FFFu,                          // the largest that stays finite
      0x00000001u, 0x807FFFFFu, 0x00008000u, // subnormals
      0x7F800000u, 0xFF800000u,             // infinities
      0x7FC00000u, 0xFFC00001u, 0x7F800001u, 0x7FBFFFFFu, 0xFF80FFFFu}; // NaNs, quiet and not
  std::mt19937 random(3);
  for (int i = 0; i < 4096; ++i)
    bits.push_back(random());
  return bits;
}

} // namespace

TEST(Bf16Rows, RoundingMatchesTheScalarRule) {
  std::vector<uint32_t> bits = patterns();
  std::vector<float> values;
  for (uint32_t b : bits)
    values.push_back(fromBits(b));
  // Every length up to a few vectors, then the whole set.
  for (size_t n : {size_t(1), size_t(7), size_t(8), size_t(17), size_t(33), values.size()}) {
    std::vector<uint16_t> rounded(n, 0xDEAD);
    roundBf16Row(values.data(), rounded.data(), static_cast<int64_t>(n));
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(rounded[i], floatToBF16(values[i]))
          << "f32 bits 0x" << std::hex << bits[i] << " at length " << std::dec << n;
  }
}

TEST(Bf16Rows, WideningIsExact) {
  std::vector<uint16_t> in;
  for (uint32_t b = 0; b < 0x10000; ++b)
    in.push_back(static_cast<uint16_t>(b));
  std::vector<float> out(in.size());
  widenBf16Row(in.data(), out.data(), static_cast<int64_t>(in.size()));
  for (size_t i = 0; i < in.size(); ++i) {
    float expected = bf16ToFloat(in[i]);
    ASSERT_EQ(std::memcmp(&out[i], &expected, sizeof(float)), 0) << "bf16 bits 0x" << std::hex << i;
  }
}

TEST(Bf16Rows, MatricesKeepTheirStrides) {
  // 3 x 5 elements in rows of 8 (in) and 6 (out): the padding is not touched.
  const int64_t rows = 3, cols = 5;
  std::vector<uint16_t> in(rows * 8);
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = floatToBF16(static_cast<float>(i) + 0.5f);
  std::vector<float> wide(rows * 6, -1.0f);
  widenBf16Matrix(in.data(), 8, wide.data(), 6, rows, cols, 2);
  std::vector<uint16_t> back(rows * 7, 0xBEEF);
  roundBf16Matrix(wide.data(), 6, back.data(), 7, rows, cols, 2);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < 7; ++j) {
      if (j < cols) {
        EXPECT_EQ(wide[i * 6 + j], bf16ToFloat(in[i * 8 + j]));
        EXPECT_EQ(back[i * 7 + j], in[i * 8 + j]);
      } else {
        EXPECT_EQ(back[i * 7 + j], 0xBEEF) << "row " << i << " padding written";
        if (j < 6) {
          EXPECT_EQ(wide[i * 6 + j], -1.0f) << "row " << i << " padding written";
        }
      }
    }
}
