//===- Trainer.h - The trainer: flags, set-up and the step loop -*- C++ -*-===//
//
// Everything `main` does, with the generated object's two symbols passed in so
// that the library does not depend on them (docs/Runtime.md, section 5).
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_TRAINER_TRAINER_H
#define FSDPRT_TRAINER_TRAINER_H

#include "abi/Manifest.h"

#include <cstdint>

namespace fsdprt {

using TrainStepFn = float (*)(void *arena, int64_t step, float lr);
/// The step of a plan with offload = optimizer (manifest.host_arena_bytes >
/// 0), which the generated object defines under the same name
/// (fsdp_offloaded_train_step of fsdprt.h).
using OffloadedTrainStepFn = float (*)(void *arena, void *hostArena, int64_t step, float lr);

/// Calls a step of either type: with the host arena when the plan offloads
/// the optimizer (`hostArena` not null). Its collectives are `manifest`'s.
float callStep(TrainStepFn stepFn, const Manifest &manifest, void *arena, uint8_t *hostArena,
               int64_t step, float lr);

/// Runs the trainer's command line `argv` for the model described by
/// `manifestText` whose step is `trainStep`, as this process's rank: starts
/// MPI (once per process) and leaves it running for the caller to finish
/// (finishMpi), so that tests can run several trainers in one process.
/// Returns the exit status of a successful run (0); errors exit the process
/// with status 1 (or abort every rank).
/// `evalManifestText` and `evalStep`: the held-out evaluation step, or null
/// when the object has none. `kernelOrigins` and `evalKernelOrigins`: each
/// step's fsdp_kernel_origins table, or null.
int runTrainer(int argc, const char *const *argv, const char *manifestText,
               TrainStepFn trainStep, const char *evalManifestText = nullptr,
               TrainStepFn evalStep = nullptr, const char *kernelOrigins = nullptr,
               const char *evalKernelOrigins = nullptr);

} // namespace fsdprt

#endif // FSDPRT_TRAINER_TRAINER_H
