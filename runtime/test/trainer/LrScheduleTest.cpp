//===- LrScheduleTest.cpp - The learning rate of each step ----------------===//

#include "trainer/LrSchedule.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace fsdprt;

namespace {

constexpr double kPi = 3.14159265358979323846;

TEST(LrSchedule, ConstantWithoutWarmupOrDecay) {
  LrSchedule schedule{0.01, 0, LrDecay::None, 100, 0.0};
  for (int64_t step : {1, 50, 100, 1000})
    EXPECT_EQ(schedule.at(step), 0.01);
  EXPECT_EQ(schedule.problem(), "");
}

TEST(LrSchedule, WarmupRisesLinearlyToThePeak) {
  LrSchedule schedule{0.01, 4, LrDecay::None, 100, 0.0};
  EXPECT_DOUBLE_EQ(schedule.at(1), 0.0025);
  EXPECT_DOUBLE_EQ(schedule.at(2), 0.005);
  EXPECT_DOUBLE_EQ(schedule.at(4), 0.01);
  EXPECT_DOUBLE_EQ(schedule.at(5), 0.01);
}

TEST(LrSchedule, CosineDecaysFromThePeakToTheFloorAndStays) {
  LrSchedule schedule{1.0, 10, LrDecay::Cosine, 110, 0.1};
  EXPECT_DOUBLE_EQ(schedule.at(10), 1.0);
  // A quarter of the way: (1 + cos(pi / 4)) / 2 of the span above the floor.
  EXPECT_DOUBLE_EQ(schedule.at(35), 0.1 + 0.9 * 0.5 * (1.0 + std::cos(kPi / 4)));
  EXPECT_DOUBLE_EQ(schedule.at(60), 0.55);
  EXPECT_DOUBLE_EQ(schedule.at(110), 0.1);
  EXPECT_DOUBLE_EQ(schedule.at(500), 0.1);
}

TEST(LrSchedule, LinearDecaysFromThePeakToTheFloorAndStays) {
  LrSchedule schedule{1.0, 0, LrDecay::Linear, 100, 0.2};
  EXPECT_DOUBLE_EQ(schedule.at(25), 1.0 - 0.8 * 0.25);
  EXPECT_DOUBLE_EQ(schedule.at(100), 0.2);
  EXPECT_DOUBLE_EQ(schedule.at(101), 0.2);
}

TEST(LrSchedule, NamesRoundTrip) {
  for (LrDecay decay : {LrDecay::None, LrDecay::Cosine, LrDecay::Linear})
    EXPECT_EQ(parseLrDecay(lrDecayName(decay)), decay);
  EXPECT_FALSE(parseLrDecay("exponential"));
}

TEST(LrSchedule, Problems) {
  EXPECT_NE(LrSchedule({1.0, 0, LrDecay::None, 10, 0.5}).problem(), "");
  EXPECT_NE(LrSchedule({1.0, 0, LrDecay::Cosine, 10, 2.0}).problem(), "");
  EXPECT_NE(LrSchedule({1.0, 10, LrDecay::Linear, 10, 0.0}).problem(), "");
  EXPECT_EQ(LrSchedule({1.0, 10, LrDecay::Linear, 11, 1.0}).problem(), "");
}

} // namespace
