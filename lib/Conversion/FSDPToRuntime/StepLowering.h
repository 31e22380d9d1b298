//===- StepLowering.h - the step's fsdp ops onto arena buffers --*- C++ -*-===//

#ifndef FSDP_CONVERSION_FSDPTORUNTIME_STEPLOWERING_H
#define FSDP_CONVERSION_FSDPTORUNTIME_STEPLOWERING_H

#include "ArenaLayout.h"
#include "OffloadedUpdates.h"

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
/// runtime calls. The updates of offload = optimizer are OffloadedUpdates';
/// this is the DeviceStep through which they use the step's buffers and
/// runtime calls.
class StepLowering : private OffloadedUpdates::DeviceStep {
public:
  /// `prefetch`: how many gathers start ahead of the one being waited for.
  /// `hostArena`: the host arena of offload = optimizer, or null.
  StepLowering(ModuleOp module, const ArenaLayout &layout, Value arena, Value hostArena,
               Block &body, int64_t prefetch)
      : module(module), layout(layout), arena(arena), hostArena(hostArena), body(body),
        b(OpBuilder::atBlockBegin(&body)), prefetch(prefetch),
        offloaded(module, layout, hostArena, body, b, *this) {}

  LogicalResult lower(Value stepNumber, Value learningRate);

  /// After lower(): the element type of each offloaded unit's gradient as it
  /// reaches the host.
  const llvm::StringMap<Type> &hostGradTypes() const { return offloaded.hostGradTypes(); }

  /// Writes the tensor `value` at byte `offset` of the arena, at the end of
  /// the step.
  void storeAtEnd(Location loc, Value value, int64_t offset) {
    b.setInsertionPoint(body.getTerminator());
    auto type = llvm::cast<RankedTensorType>(value.getType());
    materializeInto(loc, value, bytesView(loc, arena, offset, tensorBytes(type)));
  }
  /// A byte buffer of the arena.
  Value arenaBytes(Location loc, ArenaRegion region) override {
    return bytesView(loc, arena, region.offset, region.bytes);
  }
  /// A byte buffer of the host arena (offload = optimizer).
  Value hostArenaBytes(Location loc, ArenaRegion region) override {
    return bytesView(loc, hostArena, region.offset, region.bytes);
  }
  /// `shape` x `elementType` at byte `offset` of the byte buffer `bytes`.
  Value view(Location loc, Value bytes, int64_t offset, ArrayRef<int64_t> shape,
             Type elementType) override {
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
  Value bytesView(Location loc, Value bytes, int64_t offset, int64_t size) {
    return view(loc, bytes, offset, {size}, b.getI8Type());
  }
  /// A transient buffer, tagged with what it holds for fsdp-assign-buffers'
  /// accounting.
  Value allocBytes(Location loc, int64_t size, StringRef kind) override;
  /// Starts a collective; returns the handle to wait for.
  Value start(Location loc, StringRef name, ValueRange args) override;
  Operation *wait(Location loc, Value handle) override;
  /// Starts reducing the buffer `full` into `shard`, of `shardType`, over `group`.
  Value startReduceScatter(Location loc, Value full, Value shard, RankedTensorType shardType,
                           Reduction reduction, Group group);
  /// Starts reducing the buffer `bytes`, which holds a `type`, in place over `group`.
  Value startAllReduce(Location loc, Value bytes, RankedTensorType type, Reduction reduction,
                       Group group);
  Value bufferOf(Value value) override { return buffers.lookup(value); }
  Value reductionHandleOf(Value bytes) override { return reductionHandles.lookup(bytes); }
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
  /// An all-reduce of `input` into `reduce`'s result: fsdp.all_reduce, or
  /// the tensor ranks' sum of fsdp.tensor_sum.
  void lowerAllReduce(Operation *reduce, Value input, Reduction reduction, Group group);
  /// Sequence blocks (fsdp-split-sequence). The runtime's collectives move
  /// contiguous blocks: a value split along a dimension with others before it
  /// is laid out rank-major first ([ranks, outer..., block, inner...]), and
  /// a gathered one put back in place.
  Value blocksFirst(Location loc, Value whole, int64_t dim, int64_t ranks);
  Value blocksInPlace(Location loc, Value blocks, RankedTensorType whole, int64_t dim,
                      int64_t ranks);
  /// A buffer of `whole`'s blocks laid out rank-major, here.
  Value arrangeBlocks(Location loc, Value whole, int64_t dim, int64_t ranks);
  void lowerTensorReduceScatter(TensorReduceScatterOp scatter);
  /// fsdp.tensor_all_gather and fsdp.tensor_unchunk: the tensor ranks'
  /// blocks of `input` along `dim`, gathered into `gather`'s whole result.
  void lowerTensorAllGather(Operation *gather, Value input, int64_t dim);
  /// A view of this rank's block of `count` blocks of type `block` laid out
  /// rank-major in the byte buffer `blocks`.
  Value ownBlock(Location loc, Value blocks, RankedTensorType block, int64_t count);
  void lowerTensorChunk(TensorChunkOp chunk);
  /// An all-gather of the blocks, or with fewer blocks than tensor ranks the
  /// sum of each block's ranks.
  void lowerTensorUnchunk(TensorUnchunkOp unchunk);
  /// Vocabulary parallelism (VocabularyParallel.cpp): the embedding and its
  /// gradient on the rank's block of rows; the cross-entropy and its
  /// gradient from each rank's statistics of its block of classes, gathered.
  void lowerTensorEmbedding(TensorEmbeddingOp embedding);
  void lowerTensorEmbeddingGrad(TensorEmbeddingGradOp grad);
  void lowerTensorCrossEntropy(TensorCrossEntropyOp loss);
  void lowerTensorCrossEntropyGrad(TensorCrossEntropyGradOp grad);
  /// The first of this rank's block of `block` rows or classes: a [1] tensor
  /// where the kernels read it.
  Value blockStart(Location loc, int64_t block);
  /// fsdp.block_indices of `indices` into this rank's block of `block` rows,
  /// made once for the embedding and its gradient.
  Value blockIndices(Location loc, Value indices, int64_t block);
  /// Computes this rank's fsdp.cross_entropy_stats of `logits` here, and
  /// returns the op `build` makes of the tensor ranks' gathered [T, 3, N].
  Operation *withGatheredStatistics(Location loc, Value logits, Value targets, Value first,
                                    function_ref<Operation *(Value stats)> build);
  /// The plan's tensor ranks.
  int64_t tensorRanks() {
    return module->getAttrOfType<PlanAttr>(FSDPDialect::getPlanAttrName()).getTensorParallel();
  }
  LogicalResult lowerUpdate(UpdateOp update, Value stepNumber, Value learningRate);
  /// On the device, the views of the device scalars that hold `optimizer`'s
  /// factors of the step, written from `step` and `lr` (read there) by a
  /// scalar op before the first update, which every update then reads;
  /// empty where the update computes them itself (on the host, an optimizer
  /// without them, or a second optimizer: the scalars hold one's).
  SmallVector<Value> stepFactorsOf(Location loc, OptimizerAttrInterface optimizer, Value step,
                                   Value lr);
  /// The buffer of `unit`'s gradient shard, which holds `grad` (the value its
  /// update reads), tagged for fsdp-assign-buffers and the manifest.
  Value gradientShard(Value grad, UnitOp unit) override;
  /// Marks the allocation `bytes` as `unit`'s gradient shard.
  Value tagGradientShard(Value bytes, UnitOp unit);
  /// Computes `value` (a tensor) into the byte buffer `bytes`, here.
  void materializeInto(Location loc, Value value, Value bytes) override;
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
  /// The first class and gathered statistics of each lowered
  /// fsdp.tensor_cross_entropy, by its logits and targets: its gradient's.
  llvm::DenseMap<std::pair<Value, Value>, std::pair<Value, Value>> lossStatistics;
  /// fsdp.block_indices made, by indices and block size.
  llvm::DenseMap<std::pair<Value, int64_t>, Value> localIndices;
  /// The wait of the sequence blocks' collective started last.
  Operation *pendingTensorCollective = nullptr;
  /// The start handle of the reduction that fills a buffer last (a replica
  /// all-reduce after the shard's reduce-scatter, in place).
  llvm::DenseMap<Value, Value> reductionHandles;
  /// The optimizer whose factors of the step the device scalars hold, once
  /// the first update wrote them (stepFactorsOf).
  Attribute deviceStepFactors;
  /// offload = optimizer's updates; declared after `b`, which they share.
  OffloadedUpdates offloaded;
};

} // namespace mlir::fsdp

#endif // FSDP_CONVERSION_FSDPTORUNTIME_STEPLOWERING_H
