//===- Evaluation.cpp - The held-out loss (--eval-data) -------------------===//

#include "trainer/Evaluation.h"

#include "abi/Collectives.h"
#include "abi/Device.h"
#include "abi/DeviceScalars.h"
#include "abi/Error.h"
#include "abi/StreamEvents.h"
#include "trainer/Ranks.h"

#include <algorithm>
#include <string>

namespace fsdprt {

HeldOutLoss::HeldOutLoss(std::unique_ptr<BatchSource> data, int64_t batches,
                         const Manifest &manifest, const Manifest &evalManifest,
                         TrainStepFn evalStep)
    : data(std::move(data)), globalBatch(manifest.batch), evalManifest(evalManifest),
      evalStep(evalStep) {
  this->batches =
      batches != 0 ? batches : std::max<int64_t>(1, this->data->numSamples() / globalBatch);
}

double HeldOutLoss::compute(const Manifest &manifest, Arena &arena, uint8_t *hostArena,
                            int64_t step) {
  double sum = 0.0;
  for (int64_t batch = 1; batch <= batches; ++batch) {
    // The evaluation step reads neither lr nor step: they are what its
    // arguments have always been.
    loadBatch(*data, batch, manifest, arena, {0.0f, step});
    startStepEvents();
    // Rare enough to run as called, never from a recording.
    float localLoss =
        enqueueStep(
            [&] {
              return callStep(evalStep, evalManifest, arena.stepData(), hostArena, step, 0.0f);
            },
            /*replayable=*/false);
    if (int pending = pendingCollectives())
      fatal("the evaluation step returned with " + std::to_string(pending) +
            " collective(s) not waited for");
    finishStep();
    if (manifest.deviceScalars)
      localLoss = takeLoss(copyLossToHost(deviceLoss(manifest, arena)));
    sum += averageOverWorld(localLoss);
  }
  return sum / static_cast<double>(batches);
}

} // namespace fsdprt
