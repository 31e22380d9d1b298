//===- HostDevice.cpp - The CPU as the trainer's device -------------------===//
//
// The CPU backend's side of Device.h and of fsdprt.h's streams and events:
// the step runs on the calling thread, in program order, and its collectives
// complete in fsdprt_wait. There is no device to choose or wait for, nothing
// to record or replay (steps do not run ahead: each is done when its call
// returns, and its loss can be read at once), streams are NULL, and events
// only have their use checked (StreamEvents.h), so that a step that would be
// wrong on the GPU fails on the CPU too.
//
// f32 and bf16 products run on oneDNN or OpenBLAS by the rules of Sgemm.h
// and Bf16Gemm.h (OpenBLAS only where its core suits the CPU,
// OpenblasCore.h): `--version` says which and why, and so does rank 0 above
// the throughput line for the kinds of product the step calls, so that a
// run's log shows what its products ran on.
//
//===----------------------------------------------------------------------===//

#include "abi/Device.h"
#include "abi/StreamEvents.h"
#include "cpu/Bf16Gemm.h"
#include "cpu/OpenblasCore.h"
#include "cpu/Sgemm.h"
#include "fsdprt/fsdprt.h"

#include <cblas.h>

#include <cstring>

namespace fsdprt {

std::string backendVersion() {
  return std::string("backend: cpu\nblas: ") + openblas_get_config() + ", " +
         openblasCoreDescription() + ", " + std::to_string(openblas_get_num_threads()) +
         " threads\n" + productKernels(true) + "\n";
}

std::string productKernels(bool bf16Products) {
  return f32GemmLine() + (bf16Products ? "\n" + bf16GemmLine() : "");
}

void openDevice() {}

// A CPU's peak depends on its cores, clock and vector units, which change
// from machine to machine; the profile's rates are the ones fsdpc's
// predictions use (bench/measure_cpu_profile.py measures them).
PeakRates devicePeak(const Manifest &manifest) {
  if (!manifest.deviceProfile)
    return {};
  const DeviceProfileSpec &profile = *manifest.deviceProfile;
  return {"device profile " + profile.name, profile.bf16, profile.f32};
}

void connectDevice(const RankPlace &) {}

// CPUs have no TF32: OpenBLAS and oneDNN compute fp32 products in fp32
// whatever the manifest allows, which is what allow_tf32 = false asks for,
// and within what true permits.
void setAllowTf32(bool) {}

void setDebugSync(bool) {}

void beginStepKernels(const KernelOrigins &) {}

bool hostTimesStep() { return true; }

// The step ran in program order: it is done.
void finishStep() {}

// The arena is the host view: an upload or a fill is done when it returns.
void finishUploads() {}

bool stepsRunAhead() { return false; }

// The step runs in program order on this thread: there is nothing to record
// or replay.
float enqueueStep(const std::function<float()> &call, bool) { return call(); }

namespace {
// The copies of the loss, done when they are made (the arena is host memory).
float lossCopies[2];
int nextLossCopy = 0;
} // namespace

int copyLossToHost(const void *address) {
  int ticket = nextLossCopy;
  nextLossCopy = 1 - nextLossCopy;
  std::memcpy(&lossCopies[ticket], address, sizeof(float));
  return ticket;
}

float takeLoss(int ticket) { return lossCopies[ticket]; }

void closeDevice() {}

} // namespace fsdprt

using namespace fsdprt;

extern "C" void *fsdprt_stream(int32_t stream) {
  checkStream("fsdprt_stream", stream);
  return nullptr;
}

extern "C" void fsdprt_event_record(int32_t event, int32_t stream) {
  checkEventRecord(event, stream);
}

extern "C" void fsdprt_stream_wait_event(int32_t stream, int32_t event) {
  checkStreamWaitEvent(stream, event);
}
