//===- OptimizerUpdate.h - in-place optimizer steps on buffers --*- C++ -*-===//

#ifndef FSDP_CONVERSION_FSDPTORUNTIME_OPTIMIZERUPDATE_H
#define FSDP_CONVERSION_FSDPTORUNTIME_OPTIMIZERUPDATE_H

#include "fsdp/IR/FSDPAttrs.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"

namespace mlir::fsdp {

/// The buffers and scalars of one parameter's update.
struct UpdateOperands {
  Value grad;             // memref of the gradient (bf16: widened as it is read)
  Value param;            // memref of the parameter, updated in place
  SmallVector<Value> state; // memrefs of the optimizer's state slots, in order
  Value step;             // i64, from 1
  Value lr;               // f32
  Value coefficient;      // f32 gradient scale (clipping), or null
  Value rounded;          // memref that also receives the new parameter in
                          // its (narrower) element type, or null
  /// Rank-0 f32 memrefs holding the optimizer's factors of this step
  /// (stepFactorCount of them, written by buildStepFactors), which the
  /// update reads; empty: it computes them from `step` and `lr` itself.
  SmallVector<Value> stepFactors;
};

/// How many factors of the step, the same for every parameter, `optimizer`'s
/// update uses: AdamW's lr / (1 - beta1^t), sqrt(1 - beta2^t) and
/// 1 - lr * weight_decay; none for SGD.
unsigned stepFactorCount(OptimizerAttrInterface optimizer);

/// A scalar linalg.generic that computes `optimizer`'s factors of step
/// `step` (i64) at learning rate `lr` (f32) into `factors` (rank-0 f32
/// memrefs): once a step, where every update would otherwise compute them
/// (a GPU kernel's threads, each element).
void buildStepFactors(OpBuilder &b, Location loc, OptimizerAttrInterface optimizer, Value step,
                      Value lr, ValueRange factors);

/// Builds the optimizer's elementwise update as a linalg.generic on buffers;
/// returns it.
linalg::GenericOp buildOptimizerUpdate(OpBuilder &b, Location loc,
                                       OptimizerAttrInterface optimizer,
                                       const UpdateOperands &operands);

} // namespace mlir::fsdp

#endif // FSDP_CONVERSION_FSDPTORUNTIME_OPTIMIZERUPDATE_H
