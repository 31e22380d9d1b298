//===- StepGraph.cpp - A step's streams joined, captured once, replayed ---===//
//
// The CUDA backend's enqueueStep (Device.h; docs/Runtime.md, section 7).
//
// A step's work runs on four streams, and the host no longer waits for the
// device between steps: the next step's first all-gather, on the all-gather
// stream, must still come after the previous step's optimizer update, on the
// compute stream. So every step forks from the compute stream (an event
// recorded there, which the other three streams wait for) and joins it again
// (an event recorded on each of them, which the compute stream waits for):
// what the compute stream has before the step (the previous step, its
// inputs' uploads) comes before all of the step, and what it gets after the
// step (the loss's copy, the next step) comes after all of it.
//
// The same fork and join make the step capturable: a capture started on the
// compute stream takes in each stream that waits for an event recorded in
// it, and CUDA ends a capture only once every such stream has joined back.
// A replayable step (device_scalars, no host code inside: Trainer.cpp
// decides) runs eagerly the first time, which loads the kernels' modules,
// fills cuBLASLt's plan cache and sets NCCL up, so that none of it happens
// during the capture; the second is captured
// (cudaStreamCaptureModeThreadLocal) and instantiated with its nodes'
// priorities, and that step and every later one are one cudaGraphLaunch on
// the compute stream. The collectives' handles and events
// (NcclCollectives.cpp, StreamEvents.cpp) are host bookkeeping done at
// capture time; the events recorded in the capture become the graph's
// edges, so replays do not touch them.
//
//===----------------------------------------------------------------------===//

#include "abi/Device.h"
#include "abi/Error.h"
#include "cuda/CudaCheck.h"
#include "cuda/CudaDevice.h"
#include "fsdprt/fsdprt.h"

#include <limits>
#include <string>

namespace fsdprt {

namespace {

/// Recorded on the compute stream as a step starts; the other streams wait.
cudaEvent_t forked = nullptr;
/// Recorded on each other stream as the step ends; the compute stream waits.
cudaEvent_t joined[kStreams] = {};
/// Replayable steps enqueued so far: the first runs eagerly, the second is
/// captured.
int64_t replayableSteps = 0;
cudaGraph_t graph = nullptr;
cudaGraphExec_t replay = nullptr;
bool capturing = false;

bool isCompute(int32_t stream) { return stream == FSDPRT_STREAM_COMPUTE; }

float forkAndJoin(const CudaDevice &device, const std::function<float()> &call) {
  cudaStream_t compute = device.streams[FSDPRT_STREAM_COMPUTE];
  recordEvent(forked, compute);
  for (int32_t stream = 0; stream < kStreams; ++stream)
    if (!isCompute(stream))
      FSDPRT_CUDA_CHECK(cudaStreamWaitEvent(device.streams[stream], forked, 0));
  float result = call();
  for (int32_t stream = 0; stream < kStreams; ++stream)
    if (!isCompute(stream)) {
      recordEvent(joined[stream], device.streams[stream]);
      FSDPRT_CUDA_CHECK(cudaStreamWaitEvent(compute, joined[stream], 0));
    }
  return result;
}

/// Fatal unless `status` is success: a step that cannot be captured runs
/// with --no-cuda-graph.
void checkCapture(cudaError_t status, const char *call) {
  if (status != cudaSuccess)
    fatal(std::string("capturing the training step as a CUDA graph: ") + call + ": " +
          cudaGetErrorString(status) + " (--no-cuda-graph runs every step without a graph)");
}

/// Captures `call`'s work into `graph` and instantiates it as `replay`.
void capture(const CudaDevice &device, const std::function<float()> &call) {
  cudaStream_t compute = device.streams[FSDPRT_STREAM_COMPUTE];
  checkCapture(cudaStreamBeginCapture(compute, cudaStreamCaptureModeThreadLocal),
               "cudaStreamBeginCapture");
  capturing = true;
  forkAndJoin(device, call);
  capturing = false;
  checkCapture(cudaStreamEndCapture(compute, &graph), "cudaStreamEndCapture");
  // Each captured node keeps its stream's priority; a replay honours them
  // only when asked, and would otherwise run every node at the priority of
  // the compute stream it is launched into: the collectives would lose theirs.
  checkCapture(cudaGraphInstantiate(&replay, graph, cudaGraphInstantiateFlagUseNodePriority),
               "cudaGraphInstantiate");
}

} // namespace

bool stepsRunAhead() { return true; }

bool capturingStep() { return capturing; }

float enqueueStep(const std::function<float()> &call, bool replayable) {
  const CudaDevice &device = openedDevice("enqueueStep");
  cudaStream_t compute = device.streams[FSDPRT_STREAM_COMPUTE];
  if (!replayable || replayableSteps++ == 0) {
    float result = forkAndJoin(device, call);
    watchStream(compute, "the step's work on the device");
    return result;
  }
  if (!replay)
    capture(device, call);
  FSDPRT_CUDA_CHECK(cudaGraphLaunch(replay, compute));
  watchStream(compute, "the step's work on the device (a CUDA graph replay, whose collectives "
                       "are not told apart: --no-cuda-graph names the one waited for)");
  return std::numeric_limits<float>::quiet_NaN();
}

void releaseStepGraph() {
  if (replay)
    FSDPRT_CUDA_CHECK(cudaGraphExecDestroy(replay));
  if (graph)
    FSDPRT_CUDA_CHECK(cudaGraphDestroy(graph));
  replay = nullptr;
  graph = nullptr;
  replayableSteps = 0;
  destroyEventTable(&forked, 1);
  destroyEventTable(joined, kStreams);
}

} // namespace fsdprt
