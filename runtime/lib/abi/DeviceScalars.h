//===- DeviceScalars.h - What a step reads and leaves in the arena -*- C++ -*-===//
//
// A CUDA graph replays its kernels with the arguments they had when it was
// captured, and reading a value on the host stops the host until the device
// gets there. So a CUDA trainer's step takes its learning rate and step
// number from the arena, and leaves its loss there, at the manifest's
// device_scalars (docs/Runtime.md, sections 1 and 2): the runtime writes
// them with each step's inputs, one upload (BatchSource.h), and copies the
// loss back once the step's work is enqueued (Device.h). Without the field
// the step takes them as arguments and returns its loss.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_ABI_DEVICESCALARS_H
#define FSDPRT_ABI_DEVICESCALARS_H

#include "abi/Arena.h"
#include "abi/Manifest.h"

#include <cstdint>

namespace fsdprt {

/// The values a step reads from the arena (the evaluation step reads
/// neither).
struct StepScalars {
  float lr = 0.0f;
  int64_t step = 0;
};

/// Writes `scalars` at the manifest's device scalars in `hostView`, and a
/// NaN where the step leaves its loss (so that a step that leaves none stops
/// the run: the loss is NaN). The manifest must have device_scalars.
ByteRange writeDeviceScalars(const Manifest &manifest, uint8_t *hostView,
                             const StepScalars &scalars);

/// The step's loss in the arena, as the step sees it (a device pointer on
/// the CUDA backend). The manifest must have device_scalars.
const void *deviceLoss(const Manifest &manifest, const Arena &arena);

} // namespace fsdprt

#endif // FSDPRT_ABI_DEVICESCALARS_H
