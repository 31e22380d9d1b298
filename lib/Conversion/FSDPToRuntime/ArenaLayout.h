//===- ArenaLayout.h - where the step's persistent tensors live -*- C++ -*-===//

#ifndef FSDP_LIB_CONVERSION_FSDPTORUNTIME_ARENALAYOUT_H
#define FSDP_LIB_CONVERSION_FSDPTORUNTIME_ARENALAYOUT_H

#include "fsdp/IR/FSDPOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::fsdp {

/// A byte range of the arena.
struct ArenaRegion {
  int64_t offset = 0;
  int64_t bytes = 0;
};

/// One optimizer state tensor of one parameter.
struct StateSlot {
  ParamOp param;
  StringRef name;
  ArenaRegion region;
};

/// The arena of one rank: parameters, the gradients of updated parameters,
/// the optimizer state and the batch's inputs, each 64-byte aligned, in that
/// order.
struct ArenaLayout {
  static constexpr int64_t kAlignment = 64;

  llvm::MapVector<ParamOp, ArenaRegion> params;
  llvm::MapVector<ParamOp, ArenaRegion> grads;
  SmallVector<StateSlot> state;
  SmallVector<ArenaRegion> inputs;
  int64_t totalBytes = 0;

  /// Lays out the module's parameters and the tensor inputs of `step`.
  static ArenaLayout build(ModuleOp module, func::FuncOp step, unsigned numInputs,
                           OptimizerAttrInterface optimizer);

  /// The state slots of `param`, in the optimizer's order.
  SmallVector<const StateSlot *> stateOf(ParamOp param) const;
};

/// Bytes of a tensor type's data.
int64_t tensorBytes(RankedTensorType type);

} // namespace mlir::fsdp

#endif // FSDP_LIB_CONVERSION_FSDPTORUNTIME_ARENALAYOUT_H
