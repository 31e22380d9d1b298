//===- Device.h - What the trainer needs from the hardware it runs on -*- C++ -*-===//
//
// The trainer (Trainer.cpp) is one implementation for both targets; what
// differs is where the step runs. Each backend defines these functions (the
// CPU's in lib/cpu/HostDevice.cpp, CUDA's in lib/cuda/CudaDevice.cpp), along
// with the Arena and the C ABI of fsdprt.h; an archive holds one backend.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_ABI_DEVICE_H
#define FSDPRT_ABI_DEVICE_H

#include "abi/Manifest.h"
#include "trainer/Ranks.h"

#include <functional>
#include <string>

namespace fsdprt {

/// The backend and the libraries it computes with, as `--version` prints them
/// (one line each); needs no device, so it works on a machine without one.
std::string backendVersion();

/// What the step's products run on and why, one line per kind of product it
/// calls (f32; bf16 when `bf16Products`), for rank 0 to print before the
/// throughput line; empty where the backend has nothing to add to --version.
std::string productKernels(bool bf16Products);

/// The dense rates a rank's MFU divides by, FLOP/s of its products in bf16
/// and in f32 (TF32 where the manifest allows it), and where they come from;
/// 0 where not known.
struct PeakRates {
  std::string source;
  double bf16 = 0, f32 = 0;
};

/// This rank's peak: a GPU's from its card (CardPeaks.h), the CPU's from the
/// device profile fsdpc planned on (manifest device_profile). The device must
/// be open.
PeakRates devicePeak(const Manifest &manifest);

/// Chooses this rank's device, once MPI runs and before anything else touches
/// it; a rank without one stops the run with an error.
void openDevice();

/// Connects the device to the step's process groups (setUpGroups): the
/// communicators the collectives run on.
void connectDevice(const RankPlace &place);

/// Whether the device's fp32 products may use TF32 (manifest allow_tf32):
/// inputs rounded to 10 bits of mantissa, sums in fp32. Off, they are exact
/// fp32 products; the device must be open.
void setAllowTf32(bool allow);

/// --debug-sync: the device finishes each kernel and runtime call before the
/// host goes on, and a failure names it, its step and the last collective
/// started (docs/Runtime.md, section 5). A GPU's steps then run as called,
/// never replayed; the CPU's calls finish where they are made anyway.
void setDebugSync(bool on);

/// The kernels' places in the model of the step about to be called: what a
/// device error in one names (CUDA; the CPU has no kernels).
void beginStepKernels(const KernelOrigins &origins);

/// Whether --trace can time the step from the host: the CPU's runtime calls
/// run where they are made; a GPU's only enqueue work.
bool hostTimesStep();

/// Whether the trainer may enqueue the next step before it has this step's
/// loss: a GPU runs the work after the calls that enqueue it, so the host
/// prepares step N + 1 while the device computes step N; on the CPU the
/// step is done when its call returns.
bool stepsRunAhead();

/// Enqueues one step's work: `call` calls the step function. The work is
/// ordered after everything enqueued before it and before everything
/// enqueued after it, on every stream the step uses. With `replayable` (the
/// step reads lr and step from the arena and runs no host code in its
/// middle) a backend may run it from a recording instead: the CUDA backend
/// calls `call` for the first replayable step, captures the second as a CUDA
/// graph and launches that graph for it and every later one. Returns what
/// the step function returned, or NaN when it was not called.
float enqueueStep(const std::function<float()> &call, bool replayable);

/// Enqueues a copy to the host of the f32 at `address` (in the arena, as the
/// step sees it: deviceLoss of DeviceScalars.h), after all the work enqueued
/// so far, and returns a ticket for takeLoss. At most two copies may be
/// untaken at once: the trainer takes step N's once step N + 1 is enqueued.
int copyLossToHost(const void *address);

/// The value copy `ticket` brought, once that copy is done: a wait for that
/// copy alone, not for the device.
float takeLoss(int ticket);

/// Returns once the device has done all the work enqueued so far: after it,
/// the host may read the arena.
void finishStep();

/// Returns once the device has done the uploads and fills of the arena
/// enqueued so far (Arena.h). The trainer calls it at the end of its
/// start-up: the step's all-gathers read the parameter shards on a stream of
/// their own, which nothing else orders after the uploads.
void finishUploads();

/// Releases what openDevice and connectDevice created (before MPI finishes).
void closeDevice();

/// The device of one run: opened when constructed, closed when destroyed.
class DeviceSession {
public:
  DeviceSession() { openDevice(); }
  ~DeviceSession() { closeDevice(); }
  DeviceSession(const DeviceSession &) = delete;
  DeviceSession &operator=(const DeviceSession &) = delete;
};

} // namespace fsdprt

#endif // FSDPRT_ABI_DEVICE_H
