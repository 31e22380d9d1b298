//===- StepFunction.h - the step a pass transforms --------------*- C++ -*-===//
//
// Most passes transform the training step, looked up by name: fsdp-autodiff's
// @train_step on the model's level, convert-fsdp-to-runtime's
// @fsdp_train_step after it. A pass run on a module without it says so rather
// than doing nothing.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_UTILS_STEPFUNCTION_H
#define FSDP_UTILS_STEPFUNCTION_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::fsdp {

/// The training step fsdp-autodiff derives from the model's @loss.
constexpr llvm::StringLiteral kModelStepFunction = "train_step";

/// Which of the two steps a pass transforms.
enum class StepLevel {
  /// @train_step on fsdp ops (fsdp-autodiff's), before the lowering.
  Model,
  /// @fsdp_train_step on buffers (convert-fsdp-to-runtime's), after it.
  Runtime,
};

/// The step of `level` in `module`, with a body; otherwise null, after an
/// error at the module's location that names `pass`, the missing function
/// and the pass that makes it.
func::FuncOp requireStep(ModuleOp module, StepLevel level, StringRef pass);

} // namespace mlir::fsdp

#endif // FSDP_UTILS_STEPFUNCTION_H
