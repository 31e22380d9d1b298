//===- Evaluation.h - The held-out loss (--eval-data) -----------*- C++ -*-===//
//
// The evaluation step fsdpc links beside the training step (fsdp_eval_step,
// docs/Runtime.md, section 1) run over the first batches of a held-out data
// set, in order: the same batches every time, so that the losses of one run
// compare.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_TRAINER_EVALUATION_H
#define FSDPRT_TRAINER_EVALUATION_H

#include "abi/Arena.h"
#include "abi/Manifest.h"
#include "trainer/BatchSource.h"
#include "trainer/Trainer.h"

#include <memory>

namespace fsdprt {

class HeldOutLoss {
public:
  /// `batches` global batches of `data` (0: as many whole ones as it holds,
  /// at least 1), each through `evalStep`, whose manifest is `evalManifest`
  /// (its collectives and kernels, for messages).
  HeldOutLoss(std::unique_ptr<BatchSource> data, int64_t batches, const Manifest &manifest,
              const Manifest &evalManifest, TrainStepFn evalStep);

  /// The samples one evaluation reads.
  int64_t samples() const { return batches * globalBatch; }

  /// The mean over the batches of the evaluation step's loss, averaged over
  /// the ranks like the training loss; `step` is the training step it
  /// follows. Collective over the world. Overwrites the inputs and the
  /// transient part of the arena, nothing else.
  double compute(const Manifest &manifest, Arena &arena, uint8_t *hostArena, int64_t step);

private:
  std::unique_ptr<BatchSource> data;
  int64_t batches = 0;
  int64_t globalBatch = 0;
  const Manifest &evalManifest;
  TrainStepFn evalStep = nullptr;
};

} // namespace fsdprt

#endif // FSDPRT_TRAINER_EVALUATION_H
