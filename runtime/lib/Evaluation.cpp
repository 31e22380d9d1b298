//===- Evaluation.cpp - The held-out loss (--eval-data) -------------------===//

#include "Evaluation.h"

#include "Collectives.h"
#include "Device.h"
#include "Error.h"
#include "Ranks.h"
#include "StreamEvents.h"

#include <algorithm>
#include <string>

namespace fsdprt {

HeldOutLoss::HeldOutLoss(std::unique_ptr<BatchSource> data, int64_t batches,
                         const Manifest &manifest, TrainStepFn evalStep)
    : data(std::move(data)), globalBatch(manifest.batch), evalStep(evalStep) {
  this->batches =
      batches != 0 ? batches : std::max<int64_t>(1, this->data->numSamples() / globalBatch);
}

double HeldOutLoss::compute(const Manifest &manifest, Arena &arena, uint8_t *hostArena,
                            int64_t step) {
  double sum = 0.0;
  for (int64_t batch = 1; batch <= batches; ++batch) {
    loadBatch(*data, batch, manifest, arena);
    startStepEvents();
    float localLoss = callStep(evalStep, arena.stepData(), hostArena, step, 0.0f);
    if (int pending = pendingCollectives())
      fatal("the evaluation step returned with " + std::to_string(pending) +
            " collective(s) not waited for");
    finishStep();
    sum += averageOverWorld(localLoss);
  }
  return sum / static_cast<double>(batches);
}

} // namespace fsdprt
