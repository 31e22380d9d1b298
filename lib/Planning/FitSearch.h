//===- FitSearch.h - the cheapest plan changes that fit a budget -*- C++ -*-===//
//
// Over budget, the compiler searches the plans a few changes away from the
// user's (recompute, micro-batches, prefetch depth, more ranks, fewer replica
// groups or a sharded strategy, bf16 compute, optimizer offload on a GPU) and
// evaluates each candidate exactly: its buffer plan compiled
// (PlanEvaluation), not estimated. What keeps the search short: a candidate
// whose sharded state alone exceeds the budget is never compiled, nor one that
// extends a change that already fits, nor a combination whose changes, added
// up from their single effects, would not fit. The candidates of one level
// (one, two, three changes) are compiled side by side on the context's
// threads. The fits on the user's ranks come first (more ranks need more
// devices), each group ranked by device-seconds per step: predicted step time
// times ranks, so more ranks must buy their cost in speed.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_PLANNING_FITSEARCH_H
#define FSDP_PLANNING_FITSEARCH_H

#include "Planning/MemoryBudget.h"

#include <vector>

namespace mlir::fsdp {

struct FitOptions {
  MemoryBudget budget;
  /// The target the candidates are compiled for (its buffer plan).
  const PipelineTarget *target = nullptr;
  const DeviceProfile *profile = nullptr;
  /// The fits reported, best first.
  unsigned maxResults = 5;
  /// Changes combined at most.
  unsigned maxChanges = 3;
  /// Candidates compiled at most (each is a compile of the step up to its
  /// buffer plan).
  unsigned maxEvaluations = 32;
};

struct PlanFix {
  /// The changes, as the plan's fields read: `remat = unit, prefetch = 0`.
  std::string changes;
  unsigned numChanges = 0;
  PlanEvaluation evaluation;

  /// What a step costs in device time: the ranking.
  double deviceSeconds() const {
    return evaluation.cost.stepSeconds * static_cast<double>(evaluation.worldSize());
  }
};

struct FitSearchResult {
  /// The plans that fit, best first.
  std::vector<PlanFix> fits;
  /// Candidates compiled, and skipped without compiling (sharded state over
  /// budget, extending a fit, or too far over by their changes' effects).
  unsigned evaluated = 0, skipped = 0;
  /// Single changes this model cannot take, each with the compiler's reason
  /// (e.g. micro-batches that do not divide a rank's rows).
  std::vector<std::pair<std::string, std::string>> impossible;
};

/// Searches the plans near `model`'s (its plan, evaluated as `base`).
/// A candidate that does not compile is not a fix: a single change that
/// cannot compile is reported in `impossible` with its first error, and no
/// combination containing it is tried.
FitSearchResult searchFits(ModuleOp model, const PlanEvaluation &base,
                           const FitOptions &options);

} // namespace mlir::fsdp

#endif // FSDP_PLANNING_FITSEARCH_H
