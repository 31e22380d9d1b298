#include "trainer/Throughput.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace fsdprt;
using testing::HasSubstr;

namespace {

/// 8 samples of 32 tokens a step; each rank's step: 3 GFLOP of products (1 in
/// bf16), 1 GFLOP of fused attention (bf16), 1 GFLOP of the two recomputed.
Manifest tokenModel() {
  Manifest manifest;
  manifest.batch = 8;
  manifest.tokensPerStep = 256;
  manifest.stepFlops = StepFlopsSpec{3e9, 1e9, 1e9, 1e9, 5e6};
  return manifest;
}

} // namespace

// By hand: the model's FLOPs are 3 + 1 - 1 = 3 GFLOP a step. At the peak, the
// bf16 products and attention (2 GFLOP) take 2 / 4 s and the f32 products
// (2 GFLOP) 2 / 2 s, of which the model's share is 3 / 4: 1.125 s. Two steps
// in 4.5 s: 3 GFLOP x 2 / 4.5 s, MFU 1.125 x 2 / 4.5 = 50%.
TEST(Throughput, ModelFlopsAndMfuOfMixedPrecisionWithRecompute) {
  Throughput throughput(tokenModel(), PeakRates{"test card", 4e9, 2e9});
  StepRates rates = throughput.over(2, 4.5);
  EXPECT_DOUBLE_EQ(rates.samplesPerSec, 16 / 4.5);
  ASSERT_TRUE(rates.tokensPerSec && rates.flopsPerSec && rates.mfu);
  EXPECT_DOUBLE_EQ(*rates.tokensPerSec, 512 / 4.5);
  EXPECT_DOUBLE_EQ(*rates.flopsPerSec, 6e9 / 4.5);
  EXPECT_DOUBLE_EQ(*rates.mfu, 0.5);
  EXPECT_EQ(Throughput::progressFields(rates), "114 tokens/s | 1.33 GFLOP/s | MFU 50.0%");
  EXPECT_EQ(Throughput::jsonFields(rates),
            "\"samples_per_sec\": 3.55556, \"tokens_per_sec\": 113.778, "
            "\"flops_per_sec\": 1.33333e+09, \"mfu\": 0.5");
}

// The first line says what a step holds and which peak MFU divides by.
TEST(Throughput, TheFirstLineNamesThePeak) {
  Throughput throughput(tokenModel(), PeakRates{"test card", 4e12, 2e12});
  EXPECT_EQ(throughput.describe(),
            "throughput: 256 tokens (8 samples) a step; each rank's step 3.00 GFLOP of "
            "products, 1.00 GFLOP of attention, less 1.00 GFLOP recomputed (and 5.00 MFLOP "
            "of other float ops, not counted); MFU against test card: 4.00 TFLOP/s bf16, "
            "2.00 TFLOP/s f32");
}

// A card outside the table: rates without MFU, and the line says how to set one.
TEST(Throughput, WithoutAPeakNoMfu) {
  Throughput throughput(tokenModel(), PeakRates{"NVIDIA B200", 0, 0});
  EXPECT_THAT(throughput.describe(),
              HasSubstr("MFU against no known peak for NVIDIA B200 (--peak-tflops sets one)"));
  StepRates rates = throughput.over(1, 1.0);
  EXPECT_TRUE(rates.flopsPerSec);
  EXPECT_FALSE(rates.mfu);
  EXPECT_EQ(Throughput::progressFields(rates), "256 tokens/s | 3.00 GFLOP/s");
}

// A model without tokens reads samples/s; a manifest without step_flops (an
// older fsdpc's) has no first line and no FLOP rates.
TEST(Throughput, SamplesWithoutTokensAndNothingWithoutFlops) {
  Manifest manifest = tokenModel();
  manifest.tokensPerStep = 0;
  StepRates rates = Throughput(manifest, PeakRates{"card", 1e9, 1e9}).over(1, 2.0);
  EXPECT_FALSE(rates.tokensPerSec);
  EXPECT_THAT(Throughput::progressFields(rates), testing::StartsWith("4.0 samples/s | "));
  manifest.stepFlops.reset();
  Throughput bare(manifest, PeakRates{"card", 1e9, 1e9});
  EXPECT_EQ(bare.describe(), "");
  EXPECT_EQ(Throughput::progressFields(bare.over(1, 2.0)), "4.0 samples/s");
  EXPECT_EQ(Throughput::jsonFields(bare.over(1, 2.0)), "\"samples_per_sec\": 4");
}

TEST(Throughput, FlopRatesAsPeopleReadThem) {
  EXPECT_EQ(formatFlopRate(989.4e12), "989.40 TFLOP/s");
  EXPECT_EQ(formatFlopRate(23.9e9), "23.90 GFLOP/s");
}
