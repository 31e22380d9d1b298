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
// Written by the trainer's thread only: the watchdog's reports read none of
// it. A kernel is kept by name, and described only when a message needs it.
std::string lastWork;
bool lastWorkIsKernel = false;
const KernelOrigins *origins = nullptr;

/// `kernel 'fsdp_kernel_29' (model.mlir:42:10, ...)`, or the call as given.
std::string describeLastWork() {
  if (!lastWorkIsKernel)
    return lastWork;
  std::string text = "kernel '" + lastWork + "'";
  if (origins)
    if (auto found = origins->find(lastWork); found != origins->end())
      text += " (" + found->second + ")";
  return text;
}

void checkIfSyncing(cudaStream_t stream) {
  if (!debugSync)
    return;
  // A launch's own error was its call's; what the work did on the device
  // comes back from the wait.
  cudaError_t status = cudaStreamSynchronize(stream);
  if (status == cudaSuccess)
    return;
  std::string collective = lastCollectiveStarted();
  fatal("step " + std::to_string(currentStep()) + ": " + describeLastWork() +
        " failed on the device: " + cudaGetErrorString(status) + " (--debug-sync" +
        (collective.empty() ? "" : "; the last collective started: " + collective) + ")");
}
} // namespace

void setDebugSync(bool on) { debugSync = on; }

void beginStepKernels(const KernelOrigins &stepOrigins) { origins = &stepOrigins; }

void afterKernel(const std::string &name, cudaStream_t stream) {
  lastWork = name;
  lastWorkIsKernel = true;
  checkIfSyncing(stream);
}

void afterDeviceWork(const std::string &what, cudaStream_t stream) {
  lastWork = what;
  lastWorkIsKernel = false;
  checkIfSyncing(stream);
}

std::string lastDeviceWork() {
  if (lastWork.empty())
    return "";
  return "step " + std::to_string(currentStep()) + ", after " + describeLastWork() +
         " was enqueued (--debug-sync names the work that failed)";
}

} // namespace fsdprt
