//===- CollectivesTest.cpp - The collectives on a group of one rank -------===//
//
// In-process, on one rank: every group has one rank, so a gather or a
// reduction is a copy, and the handle bookkeeping and its errors can be
// checked. collectives_mpi_test.cpp runs the same calls on 4 ranks.
//
//===----------------------------------------------------------------------===//

#include "abi/Collectives.h"
#include "fsdprt/fsdprt.h"
#include "trainer/Ranks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

using namespace fsdprt;
using testing::ExitedWithCode;
using testing::HasSubstr;

namespace {

class Collectives : public testing::Test {
protected:
  void SetUp() override {
    startMpi();
    RankPlace place = setUpGroups(1);
    ASSERT_EQ(place.worldSize, 1);
  }
};

TEST_F(Collectives, OneRankGathersAndReducesByCopying) {
  std::vector<float> shard = {1, 2, 3}, full(3, 0);
  fsdprt_wait(fsdprt_all_gather_start(shard.data(), full.data(), 12, FSDPRT_GROUP_SHARD));
  EXPECT_EQ(full, shard);
  std::vector<float> gradient = {4, 5, 6}, gradientShard(3, 0);
  for (int32_t op : {FSDPRT_REDUCE_SUM, FSDPRT_REDUCE_AVG}) {
    fsdprt_wait(fsdprt_reduce_scatter_start(gradient.data(), gradientShard.data(), 3,
                                            FSDPRT_DTYPE_F32, op, FSDPRT_GROUP_REPLICA));
    EXPECT_EQ(gradientShard, gradient);
  }
  std::vector<float> norms = {7, 8};
  fsdprt_wait(fsdprt_all_reduce_start(norms.data(), 2, FSDPRT_DTYPE_F32, FSDPRT_REDUCE_AVG,
                                      FSDPRT_GROUP_WORLD));
  EXPECT_EQ(norms, (std::vector<float>{7, 8}));
  // The tensor group of one rank too.
  fsdprt_wait(fsdprt_all_reduce_start(norms.data(), 2, FSDPRT_DTYPE_F32, FSDPRT_REDUCE_SUM,
                                      FSDPRT_GROUP_TENSOR));
  EXPECT_EQ(norms, (std::vector<float>{7, 8}));
  EXPECT_EQ(pendingCollectives(), 0);
}

TEST_F(Collectives, HandlesArePendingUntilWaitedFor) {
  std::vector<float> data(4, 1.0f);
  std::vector<int32_t> handles;
  for (int i = 0; i < kMaxPendingCollectives; ++i)
    handles.push_back(fsdprt_all_reduce_start(data.data(), 4, FSDPRT_DTYPE_F32, FSDPRT_REDUCE_SUM,
                                              FSDPRT_GROUP_WORLD));
  EXPECT_EQ(pendingCollectives(), kMaxPendingCollectives);
  // Waited for in any order, each handle frees its slot for a later start.
  for (auto it = handles.rbegin(); it != handles.rend(); ++it)
    fsdprt_wait(*it);
  EXPECT_EQ(pendingCollectives(), 0);
  int32_t again = fsdprt_all_reduce_start(data.data(), 4, FSDPRT_DTYPE_F32, FSDPRT_REDUCE_SUM,
                                          FSDPRT_GROUP_WORLD);
  EXPECT_GE(again, 0);
  EXPECT_LT(again, kMaxPendingCollectives);
  fsdprt_wait(again);
}

TEST_F(Collectives, InPlaceGather) {
  std::vector<float> full = {5, 6};
  fsdprt_wait(fsdprt_all_gather_start(full.data(), full.data(), 8, FSDPRT_GROUP_SHARD));
  EXPECT_EQ(full, (std::vector<float>{5, 6}));
}

TEST_F(Collectives, TooManyPending) {
  float value = 0;
  EXPECT_EXIT(
      {
        for (int i = 0; i <= kMaxPendingCollectives; ++i)
          fsdprt_all_reduce_start(&value, 1, FSDPRT_DTYPE_F32, FSDPRT_REDUCE_SUM,
                                  FSDPRT_GROUP_WORLD);
      },
      ExitedWithCode(1),
      HasSubstr("trainer: error: fsdprt_all_reduce_start: more than 256 collectives pending "
                "(each *_start needs its fsdprt_wait)"));
}

TEST_F(Collectives, BadHandles) {
  EXPECT_EXIT(fsdprt_wait(3), ExitedWithCode(1),
              HasSubstr("trainer: error: fsdprt_wait: handle 3 is not a pending collective"));
  EXPECT_EXIT(fsdprt_wait(-1), ExitedWithCode(1),
              HasSubstr("fsdprt_wait: handle -1 is not a pending collective"));
  EXPECT_EXIT(fsdprt_wait(256), ExitedWithCode(1),
              HasSubstr("fsdprt_wait: handle 256 is not a pending collective"));
  float value = 0;
  EXPECT_EXIT(
      {
        int32_t handle = fsdprt_all_reduce_start(&value, 1, FSDPRT_DTYPE_F32, FSDPRT_REDUCE_SUM,
                                                 FSDPRT_GROUP_WORLD);
        fsdprt_wait(handle);
        fsdprt_wait(handle);
      },
      ExitedWithCode(1), HasSubstr("is not a pending collective"));
}

TEST_F(Collectives, BadArguments) {
  float value = 0;
  EXPECT_EXIT(fsdprt_all_reduce_start(&value, 1, FSDPRT_DTYPE_F32, FSDPRT_REDUCE_SUM, 4),
              ExitedWithCode(1),
              HasSubstr("trainer: error: collective on unknown group 4 (expected 0 world, 1 "
                        "shard, 2 replica or 3 tensor)"));
  EXPECT_EXIT(fsdprt_all_reduce_start(&value, 1, FSDPRT_DTYPE_F32, 2, FSDPRT_GROUP_WORLD),
              ExitedWithCode(1),
              HasSubstr("trainer: error: fsdprt_all_reduce_start: unknown "
                        "reduction 2 (expected "
                        "0 sum or 1 avg)"));
  EXPECT_EXIT(fsdprt_all_reduce_start(&value, 1, 7, FSDPRT_REDUCE_SUM, FSDPRT_GROUP_WORLD),
              ExitedWithCode(1),
              HasSubstr("trainer: error: fsdprt_all_reduce_start: unknown "
                        "dtype 7 (expected 0 "
                        "f32 or 1 bf16)"));
  EXPECT_EXIT(
      fsdprt_reduce_scatter_start(&value, &value, 1, -1, FSDPRT_REDUCE_SUM, FSDPRT_GROUP_SHARD),
      ExitedWithCode(1),
      HasSubstr("trainer: error: fsdprt_reduce_scatter_start: unknown dtype -1"));
  EXPECT_EXIT(
      fsdprt_reduce_scatter_start(&value, &value, -1, FSDPRT_DTYPE_F32, 0, FSDPRT_GROUP_SHARD),
      ExitedWithCode(1),
      HasSubstr("trainer: error: fsdprt_reduce_scatter_start: negative size -1"));
  EXPECT_EXIT(fsdprt_all_gather_start(&value, &value, int64_t(1) << 31, FSDPRT_GROUP_SHARD),
              ExitedWithCode(1),
              HasSubstr("fsdprt_all_gather_start: 2147483648 bytes per rank is more than MPI's "
                        "int counts hold (2^31 - 1)"));
}

TEST(CollectivesError, BeforeTheGroupsExist) {
  float value = 0;
  EXPECT_EXIT(
      fsdprt_all_reduce_start(&value, 1, FSDPRT_DTYPE_F32, FSDPRT_REDUCE_SUM, FSDPRT_GROUP_WORLD),
      ExitedWithCode(1),
      HasSubstr("trainer: error: a collective was started before the "
                "trainer set up its "
                "process groups"));
}

// Each start takes the next collective of the step's sequence (the
// manifest's), on a group of one rank too; a start of another kind than the
// sequence says ends it: it no longer describes the step.
TEST_F(Collectives, StartsTakeTheirUnitsFromTheStepsSequence) {
  std::vector<CollectiveSpec> sequence = {
      {"all_gather", "embed"}, {"all_gather", "layers.0"}, {"reduce_scatter", "layers.0"}};
  beginStepCollectives(sequence);
  EXPECT_EQ(nextCollectiveUnit("all_gather"), "embed");
  EXPECT_EQ(nextCollectiveUnit("all_gather"), "layers.0");
  EXPECT_EQ(nextCollectiveUnit("reduce_scatter"), "layers.0");
  EXPECT_EQ(nextCollectiveUnit("all_reduce"), "") << "past the end";
  beginStepCollectives(sequence);
  EXPECT_EQ(nextCollectiveUnit("reduce_scatter"), "") << "not the kind the sequence says";
  EXPECT_EQ(nextCollectiveUnit("all_gather"), "") << "nor is anything after it";
  // The runtime's own starts take their place too.
  beginStepCollectives(sequence);
  std::vector<float> shard = {1}, full(1);
  fsdprt_wait(fsdprt_all_gather_start(shard.data(), full.data(), 4, FSDPRT_GROUP_SHARD));
  EXPECT_EQ(nextCollectiveUnit("all_gather"), "layers.0");
  EXPECT_EQ(describeCollective("all_gather", 1024, FSDPRT_GROUP_SHARD, "layers.0"),
            "the all-gather of unit 'layers.0' (1024 bytes per rank in the shard group)");
  EXPECT_EQ(describeCollective("all_reduce", 4, FSDPRT_GROUP_WORLD, ""),
            "the all-reduce of 4 bytes per rank in the world");
}

} // namespace
