//===- MemoryBudget.h - does a plan fit a rank's memory? --------*- C++ -*-===//
//
// A rank needs its planned arena (exact: fsdp-assign-buffers) plus what the
// runtime allocates beside it (the device profile's RuntimeMemory: CUDA
// context, NCCL buffers, cuBLAS workspace). The budget is the memory of one
// rank's device: `fsdpc --device-memory` or the plan's `device_memory`.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_PLANNING_MEMORYBUDGET_H
#define FSDP_PLANNING_MEMORYBUDGET_H

#include "Planning/PlanEvaluation.h"

#include "llvm/Support/raw_ostream.h"

namespace mlir::fsdp {

struct MemoryBudget {
  int64_t deviceBytes = 0;
  RuntimeMemory runtime;
  /// How the budget was given, for messages: `--device-memory=80GB`.
  std::string origin;

  int64_t needed(const PlanEvaluation &plan) const {
    return plan.arena.arenaBytes + runtime.total();
  }
  bool fits(const PlanEvaluation &plan) const { return needed(plan) <= deviceBytes; }
};

/// One line per category of what a rank needs, the total, and the budget.
void printMemoryBreakdown(llvm::raw_ostream &os, const PlanEvaluation &plan,
                          const MemoryBudget &budget);

} // namespace mlir::fsdp

#endif // FSDP_PLANNING_MEMORYBUDGET_H
