//===- Pictures.h - the predicted step as a trace and a picture -*- C++ -*-===//
//
// What a person looks at before a run: the predicted step of one rank as a
// Chrome trace (streams of ops, and its memory as counters; opens in Perfetto
// or chrome://tracing), and its memory over the step as an SVG (the FSDP
// "accordion": units gathered, computed on, freed), from a PlanEvaluation;
// after a run, the trainer's measured arena high-water marks on the same
// picture.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_PLANNING_PICTURES_H
#define FSDP_PLANNING_PICTURES_H

#include "Planning/PlanEvaluation.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <vector>

namespace mlir::fsdp {

/// The Chrome trace (JSON) of the predicted step on `profileName`.
void writeChromeTrace(llvm::raw_ostream &os, const PlanEvaluation &plan,
                      llvm::StringRef profileName);

/// The arena high-water marks a trainer measured in one step at its unit
/// boundaries: its --trace file's `arena_high_water` (docs/Runtime.md).
struct MeasuredHighWater {
  int64_t step = 0;
  int64_t persistentBytes = 0, arenaBytes = 0;
  /// After each all-gather's wait, in the step's order.
  std::vector<int64_t> afterGatherWaits;
  int64_t endOfStep = 0;
};

/// Reads the marks of the trainer's --trace file `path`, which must have run
/// the step `plan` evaluates: the same arena and as many all-gather waits.
/// The error names the file.
llvm::Expected<MeasuredHighWater> readMeasuredHighWater(llvm::StringRef path,
                                                        const PlanEvaluation &plan);

/// The SVG of one rank's memory over the predicted step: the runtime's own
/// memory, the persistent arena and the transient buffers by kind stacked,
/// the planned arena and the budget (when `budgetBytes` > 0) as lines, the
/// units' gathers marked. With `measured` (read for this plan), also the
/// planned high-water mark as a step line and the measured marks as points
/// at the predicted times of their gather waits and at the step's end.
void writeMemorySvg(llvm::raw_ostream &os, const PlanEvaluation &plan, int64_t runtimeBytes,
                    int64_t budgetBytes, llvm::StringRef title,
                    const MeasuredHighWater *measured = nullptr);

} // namespace mlir::fsdp

#endif // FSDP_PLANNING_PICTURES_H
