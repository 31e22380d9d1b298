//===- BatchRowsTest.cpp - Which samples each rank's rows hold ------------===//

#include "trainer/BatchSource.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>

using namespace fsdprt;

namespace {

TEST(RankRows, OneRankIsTheWholeBatchInOrder) {
  RankRows rows(4, 4, 0);
  // Step s uses samples (s - 1) * 4 + b mod N.
  EXPECT_EQ(rows.sampleOf(1, 0, 10), 0);
  EXPECT_EQ(rows.sampleOf(1, 3, 10), 3);
  EXPECT_EQ(rows.sampleOf(3, 1, 10), 9);
  EXPECT_EQ(rows.sampleOf(3, 2, 10), 0);
}

TEST(RankRows, RanksSplitTheGlobalBatchInRankOrder) {
  // Global batch 12 on 3 ranks of 4 rows.
  for (int64_t step : {1, 2, 7}) {
    std::multiset<int64_t> seen;
    for (int64_t rank = 0; rank < 3; ++rank) {
      RankRows rows(12, 4, rank);
      for (int64_t b = 0; b < 4; ++b) {
        int64_t n = rows.sampleOf(step, b, 1000);
        EXPECT_EQ(n, (step - 1) * 12 + rank * 4 + b);
        seen.insert(n);
      }
    }
    EXPECT_EQ(seen.size(), 12u);
    EXPECT_EQ(*seen.begin(), (step - 1) * 12);
    EXPECT_EQ(*seen.rbegin(), (step - 1) * 12 + 11);
  }
  // Wrapping is over the global sample index: rank 2 of step 1, N = 10.
  EXPECT_EQ(RankRows(12, 4, 2).sampleOf(1, 1, 10), 9 % 10);
  EXPECT_EQ(RankRows(12, 4, 2).sampleOf(1, 3, 10), 11 % 10);
}

TEST(RankRows, StepsBeyond64BitSampleIndices) {
  // (2^63 - 2) * 8 + 4 + 1 (mod 7): computed exactly.
  unsigned __int128 global = static_cast<unsigned __int128>(INT64_MAX - 1) * 8 + 5;
  EXPECT_EQ(RankRows(8, 4, 1).sampleOf(INT64_MAX, 1, 7), static_cast<int64_t>(global % 7));
}

} // namespace
