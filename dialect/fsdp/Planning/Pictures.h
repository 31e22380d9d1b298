//===- Pictures.h - the predicted step as a trace and a picture -*- C++ -*-===//
//
// What a person looks at before a run: the predicted step of one rank as a
// Chrome trace (streams of ops, and its memory as counters; opens in Perfetto
// or chrome://tracing), and its memory over the step as an SVG (the FSDP
// "accordion": units gathered, computed on, freed), from a PlanEvaluation.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_PLANNING_PICTURES_H
#define FSDP_PLANNING_PICTURES_H

#include "fsdp/Planning/PlanEvaluation.h"

#include "llvm/Support/raw_ostream.h"

namespace mlir::fsdp {

/// The Chrome trace (JSON) of the predicted step on `profileName`.
void writeChromeTrace(llvm::raw_ostream &os, const PlanEvaluation &plan,
                      llvm::StringRef profileName);

/// The SVG of one rank's memory over the predicted step: the runtime's own
/// memory, the persistent arena and the transient buffers by kind stacked,
/// the planned arena and the budget (when `budgetBytes` > 0) as lines, the
/// units' gathers marked.
void writeMemorySvg(llvm::raw_ostream &os, const PlanEvaluation &plan, int64_t runtimeBytes,
                    int64_t budgetBytes, llvm::StringRef title);

} // namespace mlir::fsdp

#endif // FSDP_PLANNING_PICTURES_H
