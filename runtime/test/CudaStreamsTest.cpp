//===- CudaStreamsTest.cpp - Streams and events on the fake runtime -------===//

#include "Arena.h"
#include "FakeCuda.h"
#include "OpenCudaDevice.h"
#include "StreamEvents.h"
#include "fsdprt/fsdprt.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

using namespace fsdprt;
using testing::ElementsAre;
using testing::ExitedWithCode;
using testing::HasSubstr;

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

TEST_F(CudaStreams, ReadF32WaitsForTheComputeStream) {
  Arena arena(64);
  float loss = 0.625f;
  std::memcpy(arena.stepData(), &loss, sizeof(loss)); // device memory is host memory here
  fake_cuda::reset();
  EXPECT_EQ(fsdprt_read_f32(static_cast<const float *>(arena.stepData())), 0.625f);
  EXPECT_THAT(fake_cuda::calls(),
              ElementsAre("cudaMemcpyAsync(host <- device2+0, 4, device to host, " +
                              stream(FSDPRT_STREAM_COMPUTE) + ")",
                          "cudaStreamSynchronize(" + stream(FSDPRT_STREAM_COMPUTE) + ")"));
}

} // namespace
