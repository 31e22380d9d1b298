//===- InputRoles.h - how the model uses each input -------------*- C++ -*-===//

#ifndef FSDP_CONVERSION_FSDPTORUNTIME_INPUTROLES_H
#define FSDP_CONVERSION_FSDPTORUNTIME_INPUTROLES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::fsdp {

/// What an input of the model is, as the runtime's data loader needs to
/// know: the role names and bounds of docs/Runtime.md.
struct InputRole {
  StringRef role;    // features, regression_target, tokens or classes
  int64_t bound = 0; // exclusive upper bound of an integer input's values
};

/// Finds the role of each of the first `numInputs` arguments of `step` from
/// the fsdp ops that use it; fails, with a diagnostic, on an integer input
/// whose values the runtime could not validate.
FailureOr<SmallVector<InputRole>> findInputRoles(func::FuncOp step, unsigned numInputs);

} // namespace mlir::fsdp

#endif // FSDP_CONVERSION_FSDPTORUNTIME_INPUTROLES_H
