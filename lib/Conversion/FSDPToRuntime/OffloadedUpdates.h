//===- OffloadedUpdates.h - offload = optimizer's updates -------*- C++ -*-===//

#ifndef FSDP_CONVERSION_FSDPTORUNTIME_OFFLOADEDUPDATES_H
#define FSDP_CONVERSION_FSDPTORUNTIME_OFFLOADEDUPDATES_H

#include "ArenaLayout.h"

#include "fsdp/IR/FSDPOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::fsdp {

/// The updates of offload = optimizer, which StepLowering hands over as it
/// lowers the step: each unit's gradient shard travels to the host arena, the
/// host updates the master and the state there, and the new shard travels
/// back.
class OffloadedUpdates {
public:
  /// What the offloaded updates use of the device's step (StepLowering): its
  /// buffers and runtime calls, built at the insertion point of the builder
  /// both share.
  class DeviceStep {
  public:
    virtual ~DeviceStep() = default;
    /// A byte buffer of the arena.
    virtual Value arenaBytes(Location loc, ArenaRegion region) = 0;
    /// A byte buffer of the host arena.
    virtual Value hostArenaBytes(Location loc, ArenaRegion region) = 0;
    /// `shape` x `elementType` at byte `offset` of the byte buffer `bytes`.
    virtual Value view(Location loc, Value bytes, int64_t offset, ArrayRef<int64_t> shape,
                       Type elementType) = 0;
    /// A transient buffer, tagged with what it holds for fsdp-assign-buffers'
    /// accounting.
    virtual Value allocBytes(Location loc, int64_t size, StringRef kind) = 0;
    /// Computes `value` (a tensor) into the byte buffer `bytes`, here.
    virtual void materializeInto(Location loc, Value value, Value bytes) = 0;
    /// Starts a collective (or a copy); returns the handle to wait for.
    virtual Value start(Location loc, StringRef name, ValueRange args) = 0;
    virtual Operation *wait(Location loc, Value handle) = 0;
    /// The byte buffer where the value of a collective lives, or null.
    virtual Value bufferOf(Value value) = 0;
    /// The start handle of the reduction that fills the buffer `bytes` last,
    /// or null.
    virtual Value reductionHandleOf(Value bytes) = 0;
    /// The buffer of `unit`'s gradient shard, which holds `grad` (the value
    /// its update reads), tagged for fsdp-assign-buffers and the manifest.
    virtual Value gradientShard(Value grad, UnitOp unit) = 0;
  };

  /// `b`: the builder of `deviceStep`, whose insertion point they share.
  OffloadedUpdates(ModuleOp module, const ArenaLayout &layout, Value hostArena, Block &body,
                   OpBuilder &b, DeviceStep &deviceStep)
      : module(module), layout(layout), hostArena(hostArena), body(body), b(b),
        deviceStep(deviceStep) {}

  /// Copies the gradient shard to the host as soon as it is complete, and
  /// records the rest of the update for emitOffloadedUpdates.
  void startOffloadedUpdate(UpdateOp update, const UnitRegions &regions, Value stepNumber,
                            Value learningRate);
  /// In the order the gradients reach the host: the host waits for each
  /// before the next starts to travel, updates the master and state in the
  /// host arena (at once, or at the end of the step with clipping) and starts
  /// the copy of the new shard (in param_dtype) to the device; the step waits
  /// for those copies before it returns.
  void emitOffloadedUpdates();
  /// Erases the widenings of reduced shards that the offloaded updates do on
  /// the host, once nothing on the device reads them.
  void eraseHostWidenings();
  /// The element type of each offloaded unit's gradient as it reaches the
  /// host.
  const llvm::StringMap<Type> &hostGradTypes() const { return gradTypesOnHost; }

private:
  /// An offloaded update whose gradient is on its way to the host.
  struct OffloadedUpdate {
    const UnitRegions *regions;
    OptimizerAttrInterface optimizer;
    Value copyHandle;  // of the gradient's copy to the host
    Type gradType;     // its element type as copied
    Value coefficient; // the clipping coefficient (a tensor), or null
    Value stepNumber, learningRate;
  };
  /// Moves the sum of squares of `grad` that clipping reads (and the
  /// widening it reads) right after `after`, the start of its copy to the
  /// host.
  void hoistSquaredNorm(Value grad, Operation *after);
  /// One unit's update on the host (`coefficient`: the clipping scale, or
  /// null): its task run by the runtime's host threads, then the copy back;
  /// returns the copy's handle.
  Value emitHostUpdate(const OffloadedUpdate &pending, Value coefficient);
  /// `fsdp_host_update_<unit>(host_arena, lr, step, coefficient, begin, end)`:
  /// the optimizer on elements [begin, end) of the unit's shard in the host
  /// arena (fsdprt_host_parallel's task).
  func::FuncOp buildHostTask(const OffloadedUpdate &pending, bool clipped);
  /// The reduction's wait or the computation after which `bytes` holds its
  /// final value, if it is a collective's or was materialized here.
  Operation *completionOf(Value bytes);

  ModuleOp module;
  const ArenaLayout &layout;
  Value hostArena;
  Block &body;
  OpBuilder &b;
  DeviceStep &deviceStep;
  SmallVector<OffloadedUpdate> offloadedUpdates;
  llvm::StringMap<Type> gradTypesOnHost;
  /// Widenings of reduced shards that offloaded updates do on the host.
  llvm::SetVector<Operation *> hostWidenings;
};

} // namespace mlir::fsdp

#endif // FSDP_CONVERSION_FSDPTORUNTIME_OFFLOADEDUPDATES_H
