//===- Device.h - What the trainer needs from the hardware it runs on -*- C++ -*-===//
//
// The trainer (Trainer.cpp) is one implementation for both targets; what
// differs is where the step runs. Each backend defines these functions (the
// CPU's in lib/cpu/HostDevice.cpp, CUDA's in lib/cuda/CudaDevice.cpp), along
// with the Arena and the C ABI of fsdprt.h; an archive holds one backend.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_DEVICE_H
#define FSDPRT_DEVICE_H

#include "Ranks.h"

#include <string>

namespace fsdprt {

/// The backend and the libraries it computes with, as `--version` prints them
/// (one line each); needs no device, so it works on a machine without one.
std::string backendVersion();

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

/// Whether --trace can time the step from the host: the CPU's runtime calls
/// run where they are made; a GPU's only enqueue work.
bool hostTimesStep();

/// Returns once the device has done all the work the step gave it: after it,
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

#endif // FSDPRT_DEVICE_H
