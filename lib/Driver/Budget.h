//===- Budget.h - A plan's memory against a rank's ---------------*- C++ -*-===//
//
// The budget from --device-memory or the plan's device_memory, what happens
// when the plan is over it (a located error with the changes that fit, or
// with --fit the best of them), and the predicted step and budget that the
// report's `cost` shows.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_DRIVER_BUDGET_H
#define FSDP_DRIVER_BUDGET_H

#include "Driver/Driver.h"
#include "Planning/FitSearch.h"

#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <string>

namespace mlir::fsdp {

/// The memory budget from --device-memory or the plan's device_memory, with
/// the runtime's own memory from the profile or --runtime-memory; none when
/// neither gives the device's memory.
mlir::FailureOr<std::optional<mlir::fsdp::MemoryBudget>>
memoryBudget(const CompilerOptions &options, mlir::ModuleOp model,
             const mlir::fsdp::DeviceProfile &profile);

/// Over budget: the located error with the figures by category and the
/// changes that fit for `target`; with --fit, the best of them (its
/// evaluation returned).
mlir::FailureOr<mlir::fsdp::PlanFix> handleOverBudget(const CompilerOptions &options,
                                                      mlir::ModuleOp model,
                                                      const mlir::fsdp::PlanEvaluation &planned,
                                                      const mlir::fsdp::MemoryBudget &budget,
                                                      const mlir::fsdp::DeviceProfile &profile,
                                                      const mlir::fsdp::PipelineTarget &target);

/// The predicted step and the budget, for fsdp-report's `cost`.
std::string costJson(const mlir::fsdp::PlanEvaluation &planned,
                     const mlir::fsdp::DeviceProfile &profile,
                     const std::optional<mlir::fsdp::MemoryBudget> &budget);

} // namespace mlir::fsdp

#endif // FSDP_DRIVER_BUDGET_H
