//===- StepLowering.h - the step's fsdp ops onto arena buffers --*- C++ -*-===//

#ifndef FSDP_CONVERSION_FSDPTORUNTIME_STEPLOWERING_H
#define FSDP_CONVERSION_FSDPTORUNTIME_STEPLOWERING_H

#include "ArenaLayout.h"

#include "fsdp/IR/FSDPOps.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::fsdp {

/// Lowers the step's fsdp ops onto buffers: persistent ones in the arena,
/// transient ones (gathered units, flat gradients) as allocations that
/// fsdp-assign-buffers places later. Each collective is a start/wait pair of
/// runtime calls. The members of offload = optimizer are defined in
/// OffloadedUpdates.cpp.
class StepLowering {
public:
  /// `prefetch`: how many gathers start ahead of the one being waited for.
  /// `hostArena`: the host arena of offload = optimizer, or null.
  StepLowering(ModuleOp module, const ArenaLayout &layout, Value arena, Value hostArena,
               Block &body, int64_t prefetch)
      : module(module), layout(layout), arena(arena), hostArena(hostArena), body(body),
        b(OpBuilder::atBlockBegin(&body)), prefetch(prefetch) {}

  LogicalResult lower(Value stepNumber, Value learningRate);

  /// After lower(): the element type of each offloaded unit's gradient as it
  /// reaches the host.
  const llvm::StringMap<Type> &hostGradTypes() const { return gradTypesOnHost; }

  /// Writes the tensor `value` at byte `offset` of the arena, at the end of
  /// the step.
  void storeAtEnd(Location loc, Value value, int64_t offset) {
    b.setInsertionPoint(body.getTerminator());
    auto type = llvm::cast<RankedTensorType>(value.getType());
    materializeInto(loc, value, bytesView(loc, arena, offset, tensorBytes(type)));
  }
  /// A byte buffer of the arena.
  Value arenaBytes(Location loc, ArenaRegion region) {
    return bytesView(loc, arena, region.offset, region.bytes);
  }
  /// A byte buffer of the host arena (offload = optimizer).
  Value hostArenaBytes(Location loc, ArenaRegion region) {
    return bytesView(loc, hostArena, region.offset, region.bytes);
  }
  /// `shape` x `elementType` at byte `offset` of the byte buffer `bytes`.
  Value view(Location loc, Value bytes, int64_t offset, ArrayRef<int64_t> shape,
             Type elementType) {
    Value at = arith::ConstantIndexOp::create(b, loc, offset);
    return memref::ViewOp::create(b, loc, MemRefType::get(shape, elementType), bytes, at,
                                  ValueRange{});
  }
  /// A tensor of a buffer's bytes that nothing else writes while it is read.
  Value tensor(Location loc, Value bytes, int64_t offset, RankedTensorType type) {
    Value memref = view(loc, bytes, offset, type.getShape(), type.getElementType());
    return bufferization::ToTensorOp::create(b, loc, type, memref, b.getUnitAttr(),
                                             UnitAttr());
  }

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
  Value bytesView(Location loc, Value bytes, int64_t offset, int64_t size) {
    return view(loc, bytes, offset, {size}, b.getI8Type());
  }
  /// A transient buffer, tagged with what it holds for fsdp-assign-buffers'
  /// accounting.
  Value allocBytes(Location loc, int64_t size, StringRef kind);
  /// Starts a collective; returns the handle to wait for.
  Value start(Location loc, StringRef name, ValueRange args);
  Operation *wait(Location loc, Value handle);
  /// Waits for a collective right before the first reader of its result, or
  /// before the next collective of its kind starts if that comes first (one
  /// in flight per kind, as FSDP does: a flat gradient lives until its
  /// reduce-scatter is waited for, and the gradient shards are read only by
  /// the updates at the end of the step; a reduce-scatter is even waited for
  /// before the next flat gradient is allocated). `pending` is the kind's wait.
  void waitBeforeFirstUse(Location loc, Value handle, Value result, Operation *&pending);
  /// Moves the wait `pending` (if any) before `op` unless it is there already.
  static void waitBefore(Operation *pending, Operation *op);
  /// Allocates a unit's gathered buffer and starts filling it, here.
  void startGather(AllGatherOp gather);
  /// Replaces `result` by a tensor of the buffer that now holds it, and
  /// returns that tensor.
  Value bindResult(Value result, Value bytes);
  UnitOp unitOf(StringRef name) { return module.lookupSymbol<UnitOp>(name); }

  LogicalResult lowerUse(UseOp use);
  void lowerView(ParamViewOp view);
  void lowerAllGather(AllGatherOp gather);
  void lowerFlatten(FlattenOp flatten);
  void lowerReduceScatter(ReduceScatterOp reduce);
  void lowerAllReduce(AllReduceOp reduce);
  LogicalResult lowerUpdate(UpdateOp update, Value stepNumber, Value learningRate);
  /// On the device, the views of the device scalars that hold `optimizer`'s
  /// factors of the step, written from `step` and `lr` (read there) by a
  /// scalar op before the first update, which every update then reads;
  /// empty where the update computes them itself (on the host, an optimizer
  /// without them, or a second optimizer: the scalars hold one's).
  SmallVector<Value> stepFactorsOf(Location loc, OptimizerAttrInterface optimizer, Value step,
                                   Value lr);
  /// offload = optimizer: copies the gradient shard to the host as soon as it
  /// is complete, and records the rest of the update for
  /// emitOffloadedUpdates.
  void startOffloadedUpdate(UpdateOp update, const UnitRegions &regions, Value stepNumber,
                            Value learningRate);
  /// In the order the gradients reach the host: the host waits for each
  /// before the next starts to travel, updates the master and state in the
  /// host arena (at once, or at the end of the step with clipping) and starts
  /// the copy of the new shard (in param_dtype) to the device; the step waits
  /// for those copies before it returns.
  void emitOffloadedUpdates();
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
  /// The buffer of `unit`'s gradient shard, which holds `grad` (the value its
  /// update reads), tagged for fsdp-assign-buffers and the manifest.
  Value gradientShard(Value grad, UnitOp unit);
  /// Marks the allocation `bytes` as `unit`'s gradient shard.
  Value tagGradientShard(Value bytes, UnitOp unit);
  /// Computes `value` (a tensor) into the byte buffer `bytes`, here.
  void materializeInto(Location loc, Value value, Value bytes);
  /// Zero gradient shards for the trainable units nothing updates.
  void zeroGradientShards();

  ModuleOp module;
  const ArenaLayout &layout;
  Value arena, hostArena;
  Block &body;
  OpBuilder b;
  /// Where the values of collectives live: a byte buffer.
  llvm::DenseMap<Value, Value> buffers;
  /// The units whose gradient shard has a buffer.
  llvm::DenseSet<Operation *> shardsWithGradient;
  llvm::DenseMap<ParamOp, Value> paramTensors;
  int64_t prefetch;
  /// The step's gathers in order, and those started ahead (buffer, handle).
  SmallVector<AllGatherOp> gathers;
  size_t gathersDone = 0;
  llvm::DenseMap<Operation *, std::pair<Value, Value>> startedGathers;
  /// The unit of each flat gradient buffer, to name its reduce-scatter.
  llvm::DenseMap<Value, StringAttr> flatGradientUnits;
  /// The wait of the reduce-scatter, and of the all-reduce, started last.
  Operation *pendingReduceScatter = nullptr, *pendingAllReduce = nullptr;
  /// The start handle of the reduction that fills a buffer last (a replica
  /// all-reduce after the shard's reduce-scatter, in place).
  llvm::DenseMap<Value, Value> reductionHandles;
  SmallVector<OffloadedUpdate> offloadedUpdates;
  llvm::StringMap<Type> gradTypesOnHost;
  /// Widenings of reduced shards that offloaded updates do on the host.
  llvm::SetVector<Operation *> hostWidenings;
  /// The optimizer whose factors of the step the device scalars hold, once
  /// the first update wrote them (stepFactorsOf).
  Attribute deviceStepFactors;
};

} // namespace mlir::fsdp

#endif // FSDP_CONVERSION_FSDPTORUNTIME_STEPLOWERING_H
