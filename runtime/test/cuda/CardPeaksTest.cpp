#include "cuda/CardPeaks.h"

#include <gtest/gtest.h>

using namespace fsdprt;

// The datasheets' dense figures, by the names cudaGetDeviceProperties gives.
TEST(CardPeaks, HopperByVariant) {
  PeakRates sxm = cardPeak("NVIDIA H100 80GB HBM3", /*allowTf32=*/false);
  EXPECT_DOUBLE_EQ(sxm.bf16, 989.4e12);
  EXPECT_DOUBLE_EQ(sxm.f32, 66.9e12);
  EXPECT_EQ(sxm.source, "NVIDIA H100 80GB HBM3 (datasheet, dense)");
  EXPECT_DOUBLE_EQ(cardPeak("NVIDIA H200", false).bf16, 989.4e12);
  EXPECT_DOUBLE_EQ(cardPeak("NVIDIA H100 PCIe", false).bf16, 756.5e12);
  EXPECT_DOUBLE_EQ(cardPeak("NVIDIA H100 NVL", false).bf16, 835.5e12);
  EXPECT_DOUBLE_EQ(cardPeak("NVIDIA H200 NVL", false).bf16, 835.5e12);
}

// f32 products run on TF32 tensor cores only where the manifest allows it.
TEST(CardPeaks, F32AsTf32OnlyWhenAllowed) {
  EXPECT_DOUBLE_EQ(cardPeak("NVIDIA H100 80GB HBM3", true).f32, 494.7e12);
  EXPECT_DOUBLE_EQ(cardPeak("NVIDIA A100-SXM4-80GB", true).f32, 156e12);
  EXPECT_DOUBLE_EQ(cardPeak("NVIDIA A100-SXM4-80GB", false).f32, 19.5e12);
}

// "L4" is a whole word: not the L40S's.
TEST(CardPeaks, WholeNames) {
  EXPECT_DOUBLE_EQ(cardPeak("NVIDIA L40S", false).bf16, 362.05e12);
  EXPECT_DOUBLE_EQ(cardPeak("NVIDIA L4", false).bf16, 121e12);
  PeakRates unknown = cardPeak("NVIDIA L40", false);
  EXPECT_EQ(unknown.bf16, 0);
  EXPECT_EQ(unknown.source, "NVIDIA L40");
  EXPECT_EQ(cardPeak("NVIDIA B200", false).bf16, 0);
}
