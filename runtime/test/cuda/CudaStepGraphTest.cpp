//===- CudaStepGraphTest.cpp - A step's streams, capture and replay -------===//
//
// enqueueStep on the fake CUDA runtime (FakeCuda.h): every step forks its
// streams from the compute stream and joins them back, so that the next
// step's collectives come after this step's update without the host waiting
// for the device, and so that the step can be captured; the first
// replayable step runs as called, the second is captured and launched, and
// the later ones are launches that see the bytes of their moment. The
// fake's checks of a capture (work joined back, no synchronising call, no
// allocation by cuBLAS) are shown failing where a step breaks them.
//
//===----------------------------------------------------------------------===//

#include "abi/Arena.h"
#include "abi/CollectiveTimeout.h"
#include "abi/Device.h"
#include "abi/StreamEvents.h"
#include "cuda/FakeCuda.h"
#include "cuda/OpenCudaDevice.h"
#include "fsdprt/fsdprt.h"
#include "trainer/Ranks.h"

#include <cublas_v2.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace fsdprt;
using testing::ElementsAre;
using testing::ExitedWithCode;
using testing::HasSubstr;
using testing::IsEmpty;
using testing::SizeIs;

namespace {

class CudaStepGraph : public OneRankCudaDevice {
protected:
  cudaStream_t cuda(int32_t id) { return static_cast<cudaStream_t>(fsdprt_stream(id)); }
  uint8_t *device(Arena &arena, int64_t offset) {
    return static_cast<uint8_t *>(arena.stepData()) + offset;
  }
  void TearDown() override {
    EXPECT_THAT(fake_cuda::callsTo("race:"), IsEmpty());
    OpenCudaDevice::TearDown();
  }
};

TEST_F(CudaStepGraph, EveryStepForksFromTheComputeStreamAndJoinsIt) {
  Arena arena(64);
  fake_cuda::reset();
  float returned = enqueueStep(
      [&] {
        cudaMemsetAsync(device(arena, 0), 7, 8, cuda(FSDPRT_STREAM_ALL_GATHER));
        return 2.5f;
      },
      /*replayable=*/false);
  EXPECT_EQ(returned, 2.5f);
  std::vector<std::string> events = fake_cuda::results("cudaEventCreateWithFlags");
  // The fork's, the four joins', and the watchdog's after the step.
  ASSERT_THAT(events, SizeIs(6));
  const std::string &compute = stream(FSDPRT_STREAM_COMPUTE);
  auto waits = [&](int32_t on, const std::string &event) {
    return "cudaStreamWaitEvent(" + stream(on) + ", " + event + ")";
  };
  auto records = [&](const std::string &event, int32_t on) {
    return "cudaEventRecord(" + event + ", " + stream(on) + ")";
  };
  auto created = [&](const std::string &event) {
    return "cudaEventCreateWithFlags(no timing) -> " + event;
  };
  EXPECT_THAT(
      fake_cuda::calls(),
      ElementsAre(created(events[0]), records(events[0], FSDPRT_STREAM_COMPUTE),
                  waits(FSDPRT_STREAM_ALL_GATHER, events[0]),
                  waits(FSDPRT_STREAM_REDUCE_SCATTER, events[0]),
                  waits(FSDPRT_STREAM_COPY, events[0]), waits(FSDPRT_STREAM_TENSOR, events[0]),
                  "cudaMemsetAsync(device2+0, 7, 8, " + stream(FSDPRT_STREAM_ALL_GATHER) + ")",
                  created(events[1]), records(events[1], FSDPRT_STREAM_ALL_GATHER),
                  "cudaStreamWaitEvent(" + compute + ", " + events[1] + ")", created(events[2]),
                  records(events[2], FSDPRT_STREAM_REDUCE_SCATTER),
                  "cudaStreamWaitEvent(" + compute + ", " + events[2] + ")", created(events[3]),
                  records(events[3], FSDPRT_STREAM_COPY),
                  "cudaStreamWaitEvent(" + compute + ", " + events[3] + ")", created(events[4]),
                  records(events[4], FSDPRT_STREAM_TENSOR),
                  "cudaStreamWaitEvent(" + compute + ", " + events[4] + ")", created(events[5]),
                  records(events[5], FSDPRT_STREAM_COMPUTE)));
  // The next step reuses the events.
  fake_cuda::reset();
  enqueueStep([] { return 0.0f; }, false);
  EXPECT_THAT(fake_cuda::callsTo("cudaEventCreate"), IsEmpty());
  EXPECT_THAT(fake_cuda::callsTo("cudaEventRecord"), SizeIs(6));
}

/// A step of two streams: the all-gather stream copies [0, 8) to [8, 16)
/// after an event of the compute stream, the compute stream then copies
/// [8, 16) to [16, 24) after the collective's wait.
float twoStreamStep(Arena &arena, int &calls) {
  ++calls;
  auto *base = static_cast<uint8_t *>(arena.stepData());
  fsdprt_event_record(0, FSDPRT_STREAM_COMPUTE);
  fsdprt_stream_wait_event(FSDPRT_STREAM_ALL_GATHER, 0);
  fsdprt_wait(fsdprt_all_gather_start(base, base + 8, 8, FSDPRT_GROUP_WORLD));
  cudaMemcpyAsync(base + 16, base + 8, 8, cudaMemcpyDeviceToDevice,
                  static_cast<cudaStream_t>(fsdprt_stream(FSDPRT_STREAM_COMPUTE)));
  return 1.0f;
}

TEST_F(CudaStepGraph, TheSecondReplayableStepIsCapturedAndEveryLaterOneReplaysIt) {
  Arena arena(64);
  uint8_t *base = device(arena, 0);
  int calls = 0;
  auto step = [&] {
    startStepEvents();
    return enqueueStep([&] { return twoStreamStep(arena, calls); }, /*replayable=*/true);
  };
  std::memset(base, 1, 8);
  EXPECT_EQ(step(), 1.0f) << "the first runs as called";
  EXPECT_EQ(base[16], 1);
  EXPECT_THAT(fake_cuda::callsTo("cudaStreamBeginCapture"), IsEmpty());
  std::memset(base, 2, 8);
  fake_cuda::reset();
  EXPECT_TRUE(std::isnan(step())) << "a graph's step returns nothing";
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(base[16], 2) << "the captured step runs by the launch";
  const std::string &compute = stream(FSDPRT_STREAM_COMPUTE);
  std::vector<std::string> graphs = fake_cuda::results("cudaStreamEndCapture");
  std::vector<std::string> execs = fake_cuda::results("cudaGraphInstantiate");
  ASSERT_THAT(graphs, SizeIs(1));
  ASSERT_THAT(execs, SizeIs(1));
  const std::vector<std::string> &log = fake_cuda::calls();
  EXPECT_EQ(log.front(), "cudaStreamBeginCapture(" + compute + ", thread-local)");
  EXPECT_EQ(log[log.size() - 4], "cudaStreamEndCapture(" + compute + ") -> " + graphs[0]);
  // Replays keep the collectives' stream priorities.
  EXPECT_EQ(log[log.size() - 3],
            "cudaGraphInstantiate(" + graphs[0] + ", use-node-priority) -> " + execs[0]);
  EXPECT_EQ(log[log.size() - 2], "cudaGraphLaunch(" + execs[0] + ", " + compute + ")");
  // The watchdog's event after the replay, the first step's again.
  const std::string watch = log.back();
  EXPECT_THAT(watch, testing::MatchesRegex("cudaEventRecord\\(event[0-9]+, " + compute + "\\)"));
  EXPECT_THAT(fake_cuda::callsTo("cudaEventCreate"), IsEmpty());
  // Later steps: one launch each, on the bytes of their moment, and the
  // watchdog's event.
  for (uint8_t value : {3, 4}) {
    std::memset(base, value, 8);
    fake_cuda::reset();
    EXPECT_TRUE(std::isnan(step()));
    EXPECT_THAT(fake_cuda::calls(),
                ElementsAre("cudaGraphLaunch(" + execs[0] + ", " + compute + ")", watch));
    EXPECT_EQ(base[16], value);
  }
  EXPECT_EQ(calls, 2);
  // A step that is not replayable (an evaluation) runs as called meanwhile.
  enqueueStep([&] { return twoStreamStep(arena, calls); }, /*replayable=*/false);
  EXPECT_EQ(calls, 3);
  EXPECT_THAT(fake_cuda::callsTo("capture:"), IsEmpty());
  // Released with the device: a device opened again starts over.
  fake_cuda::reset();
  closeDevice();
  EXPECT_THAT(fake_cuda::callsTo("cudaGraph"), ElementsAre("cudaGraphExecDestroy(" + execs[0] + ")",
                                                           "cudaGraphDestroy(" + graphs[0] + ")"));
}

TEST_F(CudaStepGraph, AClosedDeviceForgetsItsGraph) {
  Arena arena(64);
  int calls = 0;
  for (int i = 0; i < 3; ++i)
    enqueueStep([&] { return twoStreamStep(arena, calls); }, true);
  closeDevice();
  openDevice();
  fake_cuda::reset();
  enqueueStep([&] { return twoStreamStep(arena, calls); }, true);
  EXPECT_EQ(calls, 3) << "the new device's first replayable step runs as called";
  EXPECT_THAT(fake_cuda::callsTo("cudaStreamBeginCapture"), IsEmpty());
  EXPECT_THAT(fake_cuda::callsTo("cudaGraphLaunch"), IsEmpty());
}

// The products share cuBLASLt's workspace (cublasSetWorkspace): cuBLAS does
// not allocate one during the capture, and the replay computes on the
// bytes of its moment.
TEST_F(CudaStepGraph, CapturedProductsNeedNoAllocation) {
  Arena arena(64);
  auto *values = reinterpret_cast<float *>(device(arena, 0));
  values[0] = 3.0f;
  values[1] = 2.0f;
  auto product = [&] {
    fsdprt_sgemm(0, 0, 1, 1, 1, 1.0f, values, 1, values + 1, 1, 0.0f, values + 2, 1);
    return 0.0f;
  };
  enqueueStep(product, true);
  EXPECT_EQ(values[2], 6.0f);
  values[0] = 5.0f;
  enqueueStep(product, true);
  EXPECT_EQ(values[2], 10.0f);
  values[1] = -1.0f;
  enqueueStep(product, true);
  EXPECT_EQ(values[2], -5.0f);
  EXPECT_THAT(fake_cuda::callsTo("cudaGraphLaunch"), SizeIs(2));
  EXPECT_THAT(fake_cuda::callsTo("capture:"), IsEmpty());
}

// A step that waits for the device cannot be captured: CUDA refuses the call.
TEST_F(CudaStepGraph, ASynchronisingStepCannotBeCaptured) {
  auto waiting = [] {
    mgpuStreamSynchronize(fsdprt_stream(FSDPRT_STREAM_COMPUTE));
    return 0.0f;
  };
  enqueueStep(waiting, true);
  EXPECT_EXIT(enqueueStep(waiting, true), ExitedWithCode(1),
              HasSubstr("trainer: error: cudaStreamSynchronize(static_cast<cudaStream_t>(stream))"
                        ": operation not permitted when stream is capturing"));
}

// The fake's own checks, which the trainer's tests rely on.
using FakeCapture = OpenCudaDevice;

TEST_F(FakeCapture, SynchronisingAndAllocatingAreLoggedAndInvalidate) {
  cudaStream_t compute = static_cast<cudaStream_t>(fsdprt_stream(FSDPRT_STREAM_COMPUTE));
  const std::string &name = stream(FSDPRT_STREAM_COMPUTE);
  ASSERT_EQ(cudaStreamBeginCapture(compute, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorStreamCaptureUnsupported);
  EXPECT_EQ(cudaStreamSynchronize(compute), cudaErrorStreamCaptureUnsupported);
  int byte = 0;
  EXPECT_EQ(cudaMemcpy(&byte, &byte, 1, cudaMemcpyHostToHost), cudaErrorStreamCaptureUnsupported);
  void *memory = nullptr;
  EXPECT_EQ(cudaMalloc(&memory, 16), cudaErrorStreamCaptureUnsupported);
  cudaGraph_t graph = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(compute, &graph), cudaErrorStreamCaptureInvalidated);
  EXPECT_THAT(
      fake_cuda::callsTo("capture:"),
      ElementsAre("capture: cudaDeviceSynchronize() while " + name + " is captured",
                  "capture: cudaStreamSynchronize(" + name + ") while " + name + " is captured",
                  "capture: cudaMemcpy(host <- host) while " + name + " is captured",
                  "capture: cudaMalloc(16) while " + name + " is captured"));
}

TEST_F(FakeCapture, AStreamNotJoinedBackFailsTheCapture) {
  cudaStream_t compute = static_cast<cudaStream_t>(fsdprt_stream(FSDPRT_STREAM_COMPUTE));
  cudaStream_t other = static_cast<cudaStream_t>(fsdprt_stream(FSDPRT_STREAM_REDUCE_SCATTER));
  cudaEvent_t forked = nullptr, done = nullptr;
  cudaEventCreateWithFlags(&forked, cudaEventDisableTiming);
  cudaEventCreateWithFlags(&done, cudaEventDisableTiming);
  uint8_t bytes[2] = {};
  ASSERT_EQ(cudaStreamBeginCapture(compute, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  cudaEventRecord(forked, compute);
  cudaStreamWaitEvent(other, forked, 0);
  cudaEventRecord(done, other);
  cudaStreamWaitEvent(compute, done, 0);
  // Work after the join is not joined.
  cudaMemsetAsync(bytes, 1, 1, other);
  EXPECT_EQ(bytes[0], 0) << "captured, not done";
  cudaGraph_t graph = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(compute, &graph), cudaErrorStreamCaptureUnjoined);
  EXPECT_THAT(fake_cuda::callsTo("capture:"),
              ElementsAre("capture: " + stream(FSDPRT_STREAM_REDUCE_SCATTER) +
                          " was not joined back into " + stream(FSDPRT_STREAM_COMPUTE) +
                          " when the capture ended"));
  // An event last recorded in a capture cannot be waited for.
  EXPECT_EQ(cudaEventSynchronize(done), cudaErrorStreamCaptureUnsupported);
  cudaEventDestroy(forked);
  cudaEventDestroy(done);
}

TEST_F(FakeCapture, ACublasHandleWithoutItsWorkspaceWouldAllocate) {
  cudaStream_t compute = static_cast<cudaStream_t>(fsdprt_stream(FSDPRT_STREAM_COMPUTE));
  cublasHandle_t handle = nullptr;
  cublasCreate(&handle);
  cublasSetStream(handle, compute);
  float a = 2.0f, b = 3.0f, c = 0.0f, one = 1.0f, zero = 0.0f;
  ASSERT_EQ(cudaStreamBeginCapture(compute, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, &a, 1, &b, 1, &zero, &c, 1);
  cudaGraph_t graph = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(compute, &graph), cudaErrorStreamCaptureInvalidated);
  EXPECT_THAT(fake_cuda::callsTo("capture:"), SizeIs(1));
  EXPECT_EQ(c, 0.0f) << "captured, not done";
  cublasDestroy(handle);
}

} // namespace

// A replayed step whose work never completes (a stalled stream, as a
// collective whose peers never come) stops the rank once its limit is up,
// naming the step: the watchdog's thread sees it while the host waits for
// ever for the step's loss.
TEST_F(CudaStepGraph, AReplayThatNeverCompletesStopsTheRankNamingTheStep) {
  // The watchdog's thread is started by SetUp, in the process that dies.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Arena arena(64);
  int calls = 0;
  auto step = [&](int64_t number) {
    setCurrentStep(number, number == 1);
    startStepEvents();
    return enqueueStep([&] { return twoStreamStep(arena, calls); }, /*replayable=*/true);
  };
  setCollectiveTimeout(std::chrono::milliseconds(100));
  step(1);
  step(2);
  EXPECT_EXIT(
      {
        fake_cuda::stallStream(fsdprt_stream(FSDPRT_STREAM_COMPUTE));
        step(3);
        finishStep();
      },
      ExitedWithCode(1),
      "^trainer: error: step 3: the step's work on the device \\(a CUDA graph replay, whose "
      "collectives are not told apart: --no-cuda-graph names the one waited for\\) has not "
      "completed after 0\\.[1-9][0-9][0-9] s \\(--collective-timeout=0\\.1\\): a rank of its group "
      "stopped answering, or a device stopped; stopping every rank\n$");
  setCollectiveTimeout(kDefaultCollectiveTimeout);
}
