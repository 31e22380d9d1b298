//===- DeviceWatchdog.cpp - The device's work, watched from a thread ------===//
//
// The CUDA backend's side of the collective timeout (CollectiveTimeout.h).
// The host only enqueues work: a collective that never completes (a peer
// stopped answering, a link failed) stalls its stream and everything that
// waits for it, and the host finds out when it next blocks (a loss read,
// cudaDeviceSynchronize), for ever. So the work is watched from a thread:
// watchStream records an event after the work enqueued so far on a stream,
// and the thread queries the events (cudaEventQuery; the CUDA runtime is
// thread-safe, and the captures run in cudaStreamCaptureModeThreadLocal) and
// NCCL's asynchronous errors (ncclCommGetAsyncError, made to be called
// beside the communicator's user) every poll. An event that is not done
// within its limit, a device error, or an NCCL error stops the rank: it
// names what it waited for, in which step, aborts its communicators
// (ncclCommAbort, which ends their kernels) and stops every rank (Error.h).
//
// The events serve again once their work is done: the thread forgets done
// work every poll, and watchStream before it records (so that a device whose
// work completes at once, the tests' stand-in, reuses the same events).
//
// Each collective is watched as it is started in a step that runs as called;
// a step replayed from its CUDA graph is watched whole (its collectives run
// inside the graph, and an event recorded there would still show the last
// replay's completion before this one reaches it).
//
//===----------------------------------------------------------------------===//

#include "abi/CollectiveTimeout.h"
#include "abi/Error.h"
#include "cuda/CudaCheck.h"
#include "cuda/CudaDevice.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace fsdprt {

namespace {

using Clock = std::chrono::steady_clock;

/// Work enqueued before `event`, which must complete within `limit`.
struct Watched {
  cudaEvent_t event;
  std::string what;
  int64_t step;
  Clock::time_point begin;
  Milliseconds limit;
};

std::mutex lock;
std::condition_variable wake;
std::vector<Watched> watched; // in the order enqueued
std::vector<cudaEvent_t> spare;
bool stopping = false;
// Never destroyed: a rank that stops on an error exits with it running.
std::thread *watcher = nullptr;

/// Often enough that a timeout is seen within a twentieth of it.
Milliseconds pollInterval() {
  return std::clamp(collectiveTimeout() / 20, Milliseconds(5), Milliseconds(250));
}

[[noreturn]] void stopEveryRank(const std::string &message) {
  abortNccl();
  fatalOnThisRank(message);
}

/// Forgets the completed work (`lock` held), whose events serve again.
void reapCompleted() {
  auto done = [](const Watched &entry) {
    if (cudaEventQuery(entry.event) != cudaSuccess)
      return false;
    spare.push_back(entry.event);
    return true;
  };
  watched.erase(std::remove_if(watched.begin(), watched.end(), done), watched.end());
}

/// One round of the thread's (`lock` held). When some work is late, what
/// the rank reports is the oldest work not done: what the rest waits for.
void check() {
  reapCompleted();
  Clock::time_point now = Clock::now();
  for (const Watched &entry : watched) {
    cudaError_t status = cudaEventQuery(entry.event);
    if (status != cudaSuccess && status != cudaErrorNotReady)
      stopEveryRank("step " + std::to_string(entry.step) + ": the device failed by the end of " +
                    entry.what + ": " + cudaGetErrorString(status));
    if (status == cudaErrorNotReady && now - entry.begin > entry.limit) {
      const Watched &oldest = watched.front();
      stopEveryRank(timeoutMessage(oldest.step, oldest.what,
                                   std::chrono::duration_cast<Milliseconds>(now - oldest.begin),
                                   oldest.limit));
    }
  }
  std::string error = ncclAsyncError();
  if (!error.empty())
    stopEveryRank(watched.empty() ? "step " + std::to_string(currentStep()) + ": " + error
                                  : "step " + std::to_string(watched.front().step) + ": " + error +
                                        ", while waiting for " + watched.front().what);
}

void watch() {
  std::unique_lock<std::mutex> held(lock);
  while (!stopping) {
    wake.wait_for(held, pollInterval());
    if (!stopping && deviceOpen())
      check();
  }
}

} // namespace

void startWatchdog() {
  std::lock_guard<std::mutex> held(lock);
  stopping = false;
  if (!watcher)
    watcher = new std::thread(watch);
}

void stopWatchdog() {
  {
    std::lock_guard<std::mutex> held(lock);
    stopping = true;
  }
  wake.notify_all();
  if (watcher && watcher->joinable())
    watcher->join();
  delete watcher;
  watcher = nullptr;
  for (Watched &entry : watched)
    spare.push_back(entry.event);
  watched.clear();
  for (cudaEvent_t event : spare)
    FSDPRT_CUDA_CHECK(cudaEventDestroy(event));
  spare.clear();
}

void watchStream(cudaStream_t stream, const std::string &what) {
  if (!watcher || capturingStep())
    return;
  cudaEvent_t event = nullptr;
  {
    std::lock_guard<std::mutex> held(lock);
    reapCompleted();
    if (!spare.empty()) {
      event = spare.back();
      spare.pop_back();
    }
  }
  if (!event)
    FSDPRT_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  FSDPRT_CUDA_CHECK(cudaEventRecord(event, stream));
  std::lock_guard<std::mutex> held(lock);
  watched.push_back({event, what, currentStep(), Clock::now(), currentStepLimit()});
}

} // namespace fsdprt
