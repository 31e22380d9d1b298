//===- ArenaLayout.h - where the step's persistent tensors live -*- C++ -*-===//

#ifndef FSDP_CONVERSION_FSDPTORUNTIME_ARENALAYOUT_H
#define FSDP_CONVERSION_FSDPTORUNTIME_ARENALAYOUT_H

#include "Utils/RuntimeABI.h"
#include "fsdp/IR/FSDPOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>

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

/// With `offload = optimizer`, what a trainable unit keeps in the host arena:
/// the f32 master shard (its optimizer state too, in UnitRegions::state), the
/// place its gradient shard is copied to, and the updated shard rounded to
/// `param_dtype` for the copy back (none when that is f32: the master goes).
struct HostRegions {
  ArenaRegion master;
  ArenaRegion grad;
  ArenaRegion rounded;
};

/// What one rank keeps of a unit from step to step: its parameter shard and,
/// for a trainable unit, its optimizer state. Its gradient shard lives only
/// from the unit's reduction to its update, a transient buffer of the step
/// (StepLowering). An offloaded unit's `params` is the device's copy of the
/// shard in `param_dtype`, the one its gathers read; its master and state are
/// in the host arena.
struct UnitRegions {
  mutable UnitOp unit; // op handles have no const accessors
  bool trainable = true;
  ArenaRegion params;
  /// The element type of `params`: the unit's, or param_dtype when offloaded.
  Type paramsType;
  SmallVector<StateSlot> state;
  std::optional<HostRegions> host;

  bool offloaded() const { return host.has_value(); }
};

/// The persistent part of one rank's arena: each unit's shards, then the
/// batch's inputs, then (device arena) the step's scalars, each aligned to
/// kArenaAlignment. The step's transient buffers follow (fsdp-assign-buffers places
/// them).
struct ArenaLayout {
  /// Where the step's scalars lie in `deviceScalars` (fsdprt.h's
  /// FSDPRT_DEVICE_SCALARS_*): the runtime writes lr and step, the step
  /// writes its loss and its optimizer's factors of the step (computed once,
  /// read by every update: StepLowering::stepFactorsOf), f32 each.
  static constexpr int64_t kLrOffset = FSDPRT_DEVICE_SCALARS_LR,
                           kLossOffset = FSDPRT_DEVICE_SCALARS_LOSS,
                           kStepOffset = FSDPRT_DEVICE_SCALARS_STEP,
                           kStepFactorsOffset = FSDPRT_DEVICE_SCALARS_STEP_FACTORS,
                           kStepFactorSlots = FSDPRT_DEVICE_SCALARS_STEP_FACTOR_SLOTS,
                           kScalarBytes = FSDPRT_DEVICE_SCALARS_BYTES;

  SmallVector<UnitRegions> units;
  SmallVector<ArenaRegion> inputs;
  /// With the arena in device memory: lr, loss and step, which the step's
  /// kernels read and write there (a step replayed as a CUDA graph takes no
  /// arguments from the host), or nothing.
  std::optional<ArenaRegion> deviceScalars;
  int64_t persistentBytes = 0;
  /// The host arena of `offload = optimizer` (0 without offload): every
  /// offloaded unit's HostRegions and state, then the clipping coefficient.
  int64_t hostBytes = 0;
  ArenaRegion hostCoefficient;

  /// Lays out the module's units and the step's inputs (a rank's rows of
  /// each: all its micro-batches, one after the other), and the step's
  /// scalars when the arena is in device memory.
  static ArenaLayout build(ModuleOp module, ArrayRef<RankedTensorType> inputs, PlanAttr plan,
                           bool deviceArena);

  const UnitRegions &of(StringRef unit) const;
};

int64_t elementBytes(Type elementType);
int64_t tensorBytes(RankedTensorType type);
/// Where a parameter starts in its unit's flat buffer, in bytes.
int64_t paramByteOffset(ParamOp param);

} // namespace mlir::fsdp

#endif // FSDP_CONVERSION_FSDPTORUNTIME_ARENALAYOUT_H
