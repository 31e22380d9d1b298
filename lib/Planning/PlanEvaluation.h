//===- PlanEvaluation.h - a plan's exact memory and predicted time -*- C++ -*-===//
//
// What fsdpc --report, the memory budget and the fit search know of a plan:
// the step compiled as far as its buffer plan (fsdp-assign-buffers), its
// arena by category, and the step time the cost model predicts for it.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_PLANNING_PLANEVALUATION_H
#define FSDP_PLANNING_PLANEVALUATION_H

#include "Analysis/ArenaFigures.h"
#include "Analysis/StepCost.h"
#include "Pipelines/TrainingStepPipeline.h"
#include "fsdp/IR/FSDPAttrs.h"

#include "mlir/IR/BuiltinOps.h"

#include <array>

namespace mlir::fsdp {

/// The kinds of the step's transient buffers (fsdp-assign-buffers tags each
/// arena view), in the order the memory over the step stacks them.
inline constexpr llvm::StringLiteral kMemoryKinds[] = {"gradient_shard", "gradient", "gathered",
                                                       "collective", "activation"};
constexpr size_t kNumMemoryKinds = std::size(kMemoryKinds);

/// A rank's transient bytes by kind from `time` (predicted seconds into the
/// step) until the next sample.
struct MemorySample {
  double time = 0;
  std::array<int64_t, kNumMemoryKinds> bytes{};
  /// The planned arena's high-water mark so far: the end of the highest
  /// buffer placed by the step up to here (persistent_bytes before the
  /// first), which the trainer's scan for its last written byte measures.
  int64_t plannedHighWater = 0;

  int64_t total() const;
};

/// Where compute receives a gathered unit: the wait for an all-gather, the
/// unit boundary at which the trainer's --trace measures the arena.
struct GatherWait {
  /// The wait's position in the step's block, and when the compute stream
  /// gets past it.
  size_t op = 0;
  double time = 0;
  /// The planned high-water mark there (the buffers placed up to the wait).
  int64_t plannedHighWater = 0;
  /// The unit gathered (its start call's `fsdp.unit`).
  std::string unit;
};

/// A rank's memory over the step: the persistent arena and the transient
/// buffers live at each instant, on the predicted step's clock.
struct MemoryTimeline {
  int64_t persistentBytes = 0;
  std::vector<MemorySample> samples;
  /// The most transient bytes live at once (the manifest's `live_bytes`;
  /// the arena's transient part exceeds it only by fragmentation).
  int64_t peakLiveBytes = 0;
  /// The step's all-gather waits, in order.
  std::vector<GatherWait> gatherWaits;
  /// The planned high-water mark at the end of the step: the arena.
  int64_t plannedHighWater = 0;
};

struct PlanEvaluation {
  /// The plan evaluated (evaluateBufferPlan leaves it to the caller: the
  /// lowered module no longer carries it).
  PlanAttr plan;
  ArenaFigures arena;
  /// The compiled step's manifest, for fsdp-report.
  ManifestAttr manifest;
  /// The predicted step; its ops' `op` pointers are cleared (the compiled
  /// copy is gone).
  StepCost cost;
  MemoryTimeline memory;
  RankGrid grid;

  int64_t worldSize() const { return grid.replicas * grid.shardRanks * grid.tensorRanks; }
};

/// Reads a module compiled by buildBufferPlanPipeline: its manifest's arena
/// and the predicted time of its step on `profile`.
FailureOr<PlanEvaluation> evaluateBufferPlan(ModuleOp planned, const DeviceProfile &profile);

/// Compiles a copy of `model` with `plan` (null: the model's own) up to its
/// buffer plan and evaluates it. Diagnostics go to the context's handlers.
/// Without `verifyEachPass` the IR is verified once, after the last pass
/// (the fit search's candidates: the pipeline is the one the user's plan
/// went through verified, and verifying a deep step after each of a dozen
/// passes is a tenth of its compile).
FailureOr<PlanEvaluation> evaluatePlan(ModuleOp model, PlanAttr plan,
                                       const PipelineTarget &target,
                                       const DeviceProfile &profile, bool verifyEachPass = true);

} // namespace mlir::fsdp

#endif // FSDP_PLANNING_PLANEVALUATION_H
