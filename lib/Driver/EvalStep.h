//===- EvalStep.h - The held-out evaluation step of a trainer ---*- C++ -*-===//
//
// A trainer carries two steps on one arena: the training step and the
// held-out evaluation step, the model's forward pass alone
// (fsdp-autodiff{forward-only}), compiled by the same pipeline from the same
// plan, hence on the same persistent layout (docs/Runtime.md, section 1).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_DRIVER_EVALSTEP_H
#define FSDP_DRIVER_EVALSTEP_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

namespace mlir::fsdp {

/// Moves the evaluation step `eval` (a module the target's pipeline has
/// lowered, as `trainer`) into `trainer`: its step becomes fsdp_eval_step,
/// its manifest fsdp_eval_manifest, every other symbol it defines gets the
/// prefix `fsdp_eval_`, the runtime functions both declare are declared once,
/// and the functions identical to one of the trainer's (the forward's kernels)
/// are the trainer's.
mlir::LogicalResult mergeEvalStep(mlir::ModuleOp trainer, mlir::ModuleOp eval);

} // namespace mlir::fsdp

#endif // FSDP_DRIVER_EVALSTEP_H
