//===- DebugSync.cpp - A device error named where it happened -------------===//
//
// The CUDA backend's launches and runtime calls only enqueue work: a kernel
// that faults is found by whatever call next meets the error, often a loss
// read steps later. Two things narrow it down:
//
// - every launch and runtime call records what it was (afterDeviceWork), so
//   that an error CUDA reports later (checkCuda) also names the step and the
//   last work enqueued;
// - with --debug-sync (setDebugSync), each of them waits for its stream and
//   checks for an error before the host goes on: the failure names the kernel
//   or call, its step and the last collective started (its unit). The step
//   then runs as called, never from a graph (a capture refuses waits).
//
//===----------------------------------------------------------------------===//

#include "abi/CollectiveTimeout.h"
#include "abi/Collectives.h"
#include "abi/Device.h"
#include "abi/Error.h"
#include "cuda/CudaDevice.h"

#include <string>

namespace fsdprt {

namespace {
bool debugSync = false;
// Written by the trainer's thread only: the watchdog's reports read none of it.
std::string lastWork;
} // namespace

void setDebugSync(bool on) { debugSync = on; }

bool debugSyncing() { return debugSync; }

void afterDeviceWork(const std::string &what, cudaStream_t stream) {
  lastWork = what;
  if (!debugSync)
    return;
  // A launch's own error was its call's; what the work did on the device
  // comes back from the wait.
  cudaError_t status = cudaStreamSynchronize(stream);
  if (status == cudaSuccess)
    return;
  std::string collective = lastCollectiveStarted();
  fatal("step " + std::to_string(currentStep()) + ": " + lastWork +
        " failed on the device: " + cudaGetErrorString(status) + " (--debug-sync" +
        (collective.empty() ? "" : "; the last collective started: " + collective) + ")");
}

std::string lastDeviceWork() {
  if (lastWork.empty())
    return "";
  return "step " + std::to_string(currentStep()) + ", after " + lastWork +
         " was enqueued (--debug-sync names the work that failed)";
}

} // namespace fsdprt
