//===- OptimizerUpdate.h - in-place optimizer steps on buffers --*- C++ -*-===//

#ifndef FSDP_LIB_CONVERSION_FSDPTORUNTIME_OPTIMIZERUPDATE_H
#define FSDP_LIB_CONVERSION_FSDPTORUNTIME_OPTIMIZERUPDATE_H

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
};

/// Builds the optimizer's elementwise update as a linalg.generic on buffers;
/// returns it.
linalg::GenericOp buildOptimizerUpdate(OpBuilder &b, Location loc,
                                       OptimizerAttrInterface optimizer,
                                       const UpdateOperands &operands);

} // namespace mlir::fsdp

#endif // FSDP_LIB_CONVERSION_FSDPTORUNTIME_OPTIMIZERUPDATE_H
