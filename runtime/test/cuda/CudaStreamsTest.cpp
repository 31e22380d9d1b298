//===- CudaStreamsTest.cpp - Streams, events and loss copies on the fake runtime -===//

#include "abi/Arena.h"
#include "abi/Device.h"
#include "abi/StreamEvents.h"
#include "cuda/FakeCuda.h"
#include "cuda/OpenCudaDevice.h"
#include "fsdprt/fsdprt.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

using namespace fsdprt;
using testing::ElementsAre;
using testing::ExitedWithCode;
using testing::HasSubstr;
using testing::IsEmpty;

namespace {

using CudaStreams = OpenCudaDevice;

TEST_F(CudaStreams, EventsAreCreatedOnceAndRecordedOnTheirStream) {
  startStepEvents();
  fsdprt_event_record(5, FSDPRT_STREAM_ALL_GATHER);
  std::vector<std::string> events = fake_cuda::results("cudaEventCreateWithFlags");
  ASSERT_EQ(events.size(), 1u);
  fsdprt_stream_wait_event(FSDPRT_STREAM_COMPUTE, 5);
  startStepEvents();
  fsdprt_event_record(5, FSDPRT_STREAM_REDUCE_SCATTER);
  fsdprt_stream_wait_event(FSDPRT_STREAM_ALL_GATHER, 5);
  const std::string &event = events[0];
  EXPECT_THAT(fake_cuda::calls(),
              ElementsAre("cudaEventCreateWithFlags(no timing) -> " + event,
                          "cudaEventRecord(" + event + ", " + stream(FSDPRT_STREAM_ALL_GATHER) + ")",
                          "cudaStreamWaitEvent(" + stream(FSDPRT_STREAM_COMPUTE) + ", " + event +
                              ")",
                          "cudaEventRecord(" + event + ", " +
                              stream(FSDPRT_STREAM_REDUCE_SCATTER) + ")",
                          "cudaStreamWaitEvent(" + stream(FSDPRT_STREAM_ALL_GATHER) + ", " +
                              event + ")"));
}

TEST_F(CudaStreams, AWaitOnAnEventNotRecordedInThisStepIsAnError) {
  startStepEvents();
  fsdprt_event_record(6, FSDPRT_STREAM_COMPUTE);
  startStepEvents();
  EXPECT_EXIT(fsdprt_stream_wait_event(FSDPRT_STREAM_REDUCE_SCATTER, 6), ExitedWithCode(1),
              HasSubstr("trainer: error: fsdprt_stream_wait_event: event 6 was not recorded "
                        "earlier in this step"));
  EXPECT_EXIT(fsdprt_event_record(1, 7), ExitedWithCode(1),
              HasSubstr("trainer: error: fsdprt_event_record: unknown stream 7"));
}

// Each step's loss goes to a page-locked slot of its own, the two slots in
// turn, and reading it waits for that copy's event alone: the device goes on
// with the next step.
TEST_F(CudaStreams, LossesAreCopiedToPageLockedSlotsInTurn) {
  Arena arena(64);
  auto *device = static_cast<float *>(arena.stepData()); // device memory is host memory here
  device[1] = 0.625f;
  fake_cuda::reset();
  int first = copyLossToHost(device + 1);
  device[1] = 1.5f; // the next step's loss
  int second = copyLossToHost(device + 1);
  std::vector<std::string> events = fake_cuda::results("cudaEventCreateWithFlags");
  ASSERT_EQ(events.size(), 2u);
  const std::string &compute = stream(FSDPRT_STREAM_COMPUTE);
  auto copy = [&](const std::string &slot) {
    return "cudaMemcpyAsync(" + slot + " <- device2+4, 4, device to host, " + compute + ")";
  };
  EXPECT_THAT(fake_cuda::calls(),
              ElementsAre("cudaHostAlloc(8, 0) -> pinned1+0", copy("pinned1+0"),
                          "cudaEventCreateWithFlags(no timing) -> " + events[0],
                          "cudaEventRecord(" + events[0] + ", " + compute + ")", copy("pinned1+4"),
                          "cudaEventCreateWithFlags(no timing) -> " + events[1],
                          "cudaEventRecord(" + events[1] + ", " + compute + ")"));
  fake_cuda::reset();
  EXPECT_EQ(takeLoss(first), 0.625f);
  EXPECT_THAT(fake_cuda::calls(), ElementsAre("cudaEventSynchronize(" + events[0] + ")"));
  device[1] = 2.25f;
  int third = copyLossToHost(device + 1);
  EXPECT_EQ(third, first) << "the slot read comes round again";
  EXPECT_EQ(takeLoss(second), 1.5f) << "not overwritten by the third copy";
  EXPECT_EQ(takeLoss(third), 2.25f);
  EXPECT_THAT(fake_cuda::callsTo("cudaStreamSynchronize"), IsEmpty());
  EXPECT_THAT(fake_cuda::callsTo("cudaDeviceSynchronize"), IsEmpty());
}

TEST_F(CudaStreams, ALossIsNotCopiedOverBeforeItIsRead) {
  Arena arena(64);
  const auto *loss = static_cast<const float *>(arena.stepData());
  copyLossToHost(loss);
  copyLossToHost(loss);
  EXPECT_EXIT(copyLossToHost(loss), ExitedWithCode(1),
              HasSubstr("trainer: error: copyLossToHost: a step's loss was copied over before it "
                        "was read"));
}

// The slots and their events go with the device.
TEST_F(CudaStreams, ClosingTheDeviceFreesTheLossSlots) {
  {
    Arena arena(64);
    takeLoss(copyLossToHost(arena.stepData()));
  }
  std::vector<std::string> events = fake_cuda::results("cudaEventCreateWithFlags");
  ASSERT_EQ(events.size(), 1u);
  fake_cuda::reset();
  closeDevice();
  EXPECT_THAT(fake_cuda::callsTo("cudaFreeHost"), ElementsAre("cudaFreeHost(pinned1+0)"));
  EXPECT_THAT(fake_cuda::callsTo("cudaEventDestroy"),
              testing::Contains("cudaEventDestroy(" + events[0] + ")"));
}

} // namespace
