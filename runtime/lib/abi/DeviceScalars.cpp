//===- DeviceScalars.cpp - What a step reads and leaves in the arena ------===//

#include "abi/DeviceScalars.h"

#include <cstring>
#include <limits>

namespace fsdprt {

ByteRange writeDeviceScalars(const Manifest &manifest, uint8_t *hostView,
                             const StepScalars &scalars) {
  int64_t offset = manifest.deviceScalars->offset;
  uint8_t *at = hostView + offset;
  float noLoss = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(at + DeviceScalarsSpec::kLr, &scalars.lr, sizeof(scalars.lr));
  std::memcpy(at + DeviceScalarsSpec::kLoss, &noLoss, sizeof(noLoss));
  std::memcpy(at + DeviceScalarsSpec::kStep, &scalars.step, sizeof(scalars.step));
  return {offset, DeviceScalarsSpec::kRuntimeBytes};
}

const void *deviceLoss(const Manifest &manifest, const Arena &arena) {
  return static_cast<const uint8_t *>(arena.stepData()) + manifest.deviceScalars->offset +
         DeviceScalarsSpec::kLoss;
}

} // namespace fsdprt
