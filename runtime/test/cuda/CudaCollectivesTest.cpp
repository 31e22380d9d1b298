//===- CudaCollectivesTest.cpp - The CUDA collectives on one rank ---------===//
//
// On one rank every group is the rank alone: no NCCL call, a copy on the
// collective's stream, and the handle's event recorded there for fsdprt_wait
// to make the compute stream wait for. (More ranks: CudaCollectivesMpiTest.cpp.)
//
//===----------------------------------------------------------------------===//

#include "abi/Arena.h"
#include "abi/Collectives.h"
#include "cuda/FakeCuda.h"
#include "cuda/OpenCudaDevice.h"
#include "fsdprt/fsdprt.h"
#include "trainer/Ranks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

using namespace fsdprt;
using testing::ElementsAre;
using testing::ExitedWithCode;
using testing::HasSubstr;

namespace {

class CudaCollectives : public OneRankCudaDevice {
protected:
  float *deviceFloats(Arena &arena, int64_t offset) {
    return reinterpret_cast<float *>(static_cast<uint8_t *>(arena.stepData()) + offset);
  }
};

TEST_F(CudaCollectives, AGatherOnOneRankIsACopyOnTheAllGatherStream) {
  Arena arena(64);
  float *shard = deviceFloats(arena, 0), *full = deviceFloats(arena, 32);
  const float values[] = {1, 2, 3, 4};
  std::memcpy(shard, values, sizeof(values));
  fake_cuda::reset();
  int32_t handle = fsdprt_all_gather_start(shard, full, 16, FSDPRT_GROUP_SHARD);
  std::vector<std::string> done = fake_cuda::results("cudaEventCreateWithFlags");
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(pendingCollectives(), 1);
  fsdprt_wait(handle);
  EXPECT_EQ(pendingCollectives(), 0);
  EXPECT_EQ(std::memcmp(full, values, sizeof(values)), 0);
  const std::string &allGather = stream(FSDPRT_STREAM_ALL_GATHER);
  EXPECT_THAT(
      fake_cuda::calls(),
      ElementsAre("cudaMemcpyAsync(device2+32 <- device2+0, 16, device to device, " + allGather +
                      ")",
                  "cudaEventCreateWithFlags(no timing) -> " + done[0],
                  "cudaEventRecord(" + done[0] + ", " + allGather + ")",
                  "cudaStreamWaitEvent(" + stream(FSDPRT_STREAM_COMPUTE) + ", " + done[0] + ")"));
  // In place: nothing to copy; the handle's event is reused.
  fake_cuda::reset();
  fsdprt_wait(fsdprt_all_gather_start(full, full, 16, FSDPRT_GROUP_WORLD));
  EXPECT_THAT(fake_cuda::calls(),
              ElementsAre("cudaEventRecord(" + done[0] + ", " + allGather + ")",
                          "cudaStreamWaitEvent(" + stream(FSDPRT_STREAM_COMPUTE) + ", " +
                              done[0] + ")"));
}

TEST_F(CudaCollectives, ReductionsRunOnTheReduceScatterStream) {
  Arena arena(64);
  float *full = deviceFloats(arena, 0), *shard = deviceFloats(arena, 32);
  const float values[] = {5, 6};
  std::memcpy(full, values, sizeof(values));
  fake_cuda::reset();
  int32_t scatter = fsdprt_reduce_scatter_start(full, shard, 2, FSDPRT_DTYPE_F32, FSDPRT_REDUCE_AVG,
                                                FSDPRT_GROUP_REPLICA);
  int32_t reduce =
      fsdprt_all_reduce_start(shard, 2, FSDPRT_DTYPE_F32, FSDPRT_REDUCE_SUM, FSDPRT_GROUP_WORLD);
  EXPECT_NE(scatter, reduce);
  fsdprt_wait(reduce);
  fsdprt_wait(scatter);
  EXPECT_EQ(std::memcmp(shard, values, sizeof(values)), 0);
  const std::string &reduceScatter = stream(FSDPRT_STREAM_REDUCE_SCATTER);
  EXPECT_THAT(fake_cuda::callsTo("cudaMemcpyAsync"),
              ElementsAre("cudaMemcpyAsync(device2+32 <- device2+0, 8, device to device, " +
                          reduceScatter + ")"));
  std::vector<std::string> recorded = fake_cuda::callsTo("cudaEventRecord");
  ASSERT_EQ(recorded.size(), 2u);
  for (const std::string &call : recorded)
    EXPECT_THAT(call, testing::EndsWith(", " + reduceScatter + ")"));
  EXPECT_EQ(fake_cuda::callsTo("cudaStreamWaitEvent(" + stream(FSDPRT_STREAM_COMPUTE)).size(),
            2u);
}

TEST_F(CudaCollectives, HandlesFollowTheContract) {
  EXPECT_EXIT(fsdprt_wait(3), ExitedWithCode(1),
              HasSubstr("trainer: error: fsdprt_wait: handle 3 is not a pending collective"));
  float value = 0;
  EXPECT_EXIT(
      {
        for (int i = 0; i <= kMaxPendingCollectives; ++i)
          fsdprt_all_reduce_start(&value, 1, FSDPRT_DTYPE_F32, FSDPRT_REDUCE_SUM,
                                  FSDPRT_GROUP_WORLD);
      },
      ExitedWithCode(1),
      HasSubstr("trainer: error: fsdprt_all_reduce_start: more than 256 collectives pending"));
  EXPECT_EXIT(
      fsdprt_reduce_scatter_start(&value, &value, 1, FSDPRT_DTYPE_F32, 2, FSDPRT_GROUP_SHARD),
      ExitedWithCode(1),
      HasSubstr("trainer: error: fsdprt_reduce_scatter_start: unknown reduction 2"));
}

} // namespace
