//===- FastestPlan.h - the fastest plan near the user's that fits -*- C++ -*-===//
//
// A plan that fits its device may still give away speed: recompute on a card
// with room to spare, more micro-batches than memory asks for, the optimizer
// on the host. `fsdpc --fit=fastest` climbs from the plan that fits: of the
// changes that make a step cheaper (less or no recompute, fewer
// micro-batches, the optimizer back on the device, one gather more in
// flight, gradients reduced in bf16), each evaluated exactly (its buffer
// plan compiled, PlanEvaluation), it takes the one whose plan still fits
// with the shortest predicted step, and goes on from there while one
// shortens it; the ranks and the model's precision stay as given.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_PLANNING_FASTESTPLAN_H
#define FSDP_PLANNING_FASTESTPLAN_H

#include "Planning/FitSearch.h"

namespace mlir::fsdp {

/// The fastest plan within `options.maxChanges` climbs of `base` (which
/// fits `options.budget`): `base` itself, with no changes, when no change
/// shortens its predicted step by more than 0.1%.
PlanFix searchFastest(ModuleOp model, const PlanEvaluation &base, const FitOptions &options);

} // namespace mlir::fsdp

#endif // FSDP_PLANNING_FASTESTPLAN_H
