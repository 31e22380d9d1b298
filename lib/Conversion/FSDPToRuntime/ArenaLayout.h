//===- ArenaLayout.h - where the step's persistent tensors live -*- C++ -*-===//

#ifndef FSDP_LIB_CONVERSION_FSDPTORUNTIME_ARENALAYOUT_H
#define FSDP_LIB_CONVERSION_FSDPTORUNTIME_ARENALAYOUT_H

#include "fsdp/IR/FSDPOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::fsdp {

/// A byte range of the arena.
struct ArenaRegion {
  int64_t offset = 0;
  int64_t bytes = 0;
};

/// One optimizer state tensor of one unit's shard.
struct StateSlot {
  StringRef name;
  ArenaRegion region;
};

/// What one rank keeps of a unit from step to step: its parameter shard and,
/// for a trainable unit, its optimizer state. Its gradient shard lives only
/// from the unit's reduction to its update, a transient buffer of the step
/// (StepLowering).
struct UnitRegions {
  mutable UnitOp unit; // op handles have no const accessors
  bool trainable = true;
  ArenaRegion params;
  SmallVector<StateSlot> state;
};

/// The persistent part of one rank's arena: each unit's shards, then the
/// batch's inputs, each 64-byte aligned. The step's transient buffers follow
/// (fsdp-assign-buffers places them).
struct ArenaLayout {
  static constexpr int64_t kAlignment = 64;

  SmallVector<UnitRegions> units;
  SmallVector<ArenaRegion> inputs;
  int64_t persistentBytes = 0;

  /// Lays out the module's units and the step's inputs (a rank's rows of
  /// each: all its micro-batches, one after the other).
  static ArenaLayout build(ModuleOp module, ArrayRef<RankedTensorType> inputs,
                           OptimizerAttrInterface optimizer);

  const UnitRegions &of(StringRef unit) const;
};

int64_t elementBytes(Type elementType);
int64_t tensorBytes(RankedTensorType type);
/// Where a parameter starts in its unit's flat buffer, in bytes.
int64_t paramByteOffset(ParamOp param);

} // namespace mlir::fsdp

#endif // FSDP_LIB_CONVERSION_FSDPTORUNTIME_ARENALAYOUT_H
