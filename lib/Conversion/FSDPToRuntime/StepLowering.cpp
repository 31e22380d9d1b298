//===- StepLowering.cpp - the step's fsdp ops onto arena buffers ----------===//
//
// Shards, inputs and optimizer state are views of the arena; gathered units
// and flat gradients are allocations fsdp-assign-buffers places later;
// collectives are nonblocking runtime calls placed to overlap with compute.
//
//===----------------------------------------------------------------------===//

#include "StepLowering.h"

#include "OptimizerUpdate.h"

#include "Utils/RuntimeABI.h"
#include "Utils/RuntimeCalls.h"
#include "fsdp/IR/BufferKinds.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::fsdp;

/// FSDPRT_DTYPE_* of a reduction's elements.
static RuntimeDType runtimeDType(Type element) {
  return element.isBF16() ? RuntimeDType::BF16 : RuntimeDType::F32;
}

Value StepLowering::allocBytes(Location loc, int64_t size, StringRef kind) {
  auto alloc = memref::AllocOp::create(b, loc, MemRefType::get({size}, b.getI8Type()),
                                       b.getI64IntegerAttr(kArenaAlignment));
  alloc->setAttr(kBufferKindAttr, b.getStringAttr(kind));
  return alloc;
}

void StepLowering::materializeInto(Location loc, Value value, Value bytes) {
  auto type = llvm::cast<RankedTensorType>(value.getType());
  bufferization::MaterializeInDestinationOp::create(
      b, loc, TypeRange{}, value, view(loc, bytes, 0, type.getShape(), type.getElementType()),
      /*restrict=*/true, /*writable=*/true);
}

Value StepLowering::start(Location loc, StringRef name, ValueRange args) {
  MLIRContext *ctx = b.getContext();
  declareRuntimeFunction(module, kWait, FunctionType::get(ctx, {b.getI32Type()}, {}));
  func::FuncOp callee = declareRuntimeFunction(
      module, name, FunctionType::get(ctx, ValueRange(args).getTypes(), {b.getI32Type()}));
  return func::CallOp::create(b, loc, callee, args).getResult(0);
}

Operation *StepLowering::wait(Location loc, Value handle) {
  return func::CallOp::create(b, loc, module.lookupSymbol<func::FuncOp>(kWait), handle);
}

void StepLowering::waitBefore(Operation *pending, Operation *op) {
  if (pending && op->isBeforeInBlock(pending))
    pending->moveBefore(op);
}

void StepLowering::waitBeforeFirstUse(Location loc, Value handle, Value result,
                                      Operation *&pending) {
  // The previous collective of this kind completes before this one starts.
  waitBefore(pending, handle.getDefiningOp());
  SmallVector<Operation *> users;
  for (Operation *user : result.getUsers())
    users.push_back(body.findAncestorOpInBlock(*user));
  Operation *first = body.getTerminator();
  for (Operation *user : users)
    if (user->isBeforeInBlock(first))
      first = user;
  b.setInsertionPoint(first);
  pending = wait(loc, handle);
}

Value StepLowering::bindResult(Value result, Value bytes) {
  auto type = llvm::cast<RankedTensorType>(result.getType());
  Value value = tensor(result.getLoc(), bytes, 0, type);
  result.replaceAllUsesWith(value);
  buffers[value] = bytes;
  return value;
}


LogicalResult StepLowering::lowerUse(UseOp use) {
  auto param = SymbolTable::lookupNearestSymbolFrom<ParamOp>(use, use.getParamAttr());
  const UnitRegions &regions = layout.of(*param.getUnit());
  if (regions.unit.getRanks() != 1)
    return use.emitOpError("reads a parameter of a sharded unit; run "
                           "fsdp-insert-collectives first");
  Value &value = paramTensors[param];
  if (!value) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&body);
    // An offloaded unit's device copy is in param_dtype: widened exactly.
    RankedTensorType type = param.getTensorType();
    Type stored = regions.paramsType;
    value = tensor(param.getLoc(), arena,
                   regions.params.offset + *param.getOffset() * elementBytes(stored),
                   type.clone(stored));
    if (stored != type.getElementType())
      value = ConvertOp::create(b, param.getLoc(), type, value);
  }
  use.replaceAllUsesWith(value);
  return success();
}

void StepLowering::lowerView(ParamViewOp view) {
  auto param = SymbolTable::lookupNearestSymbolFrom<ParamOp>(view, view.getParamAttr());
  // The offset in the gathered buffer's elements: a bf16 gather of an f32
  // unit keeps the layout, at half the bytes.
  int64_t offset = *param.getOffset() * elementBytes(view.getType().getElementType());
  view.replaceAllUsesWith(
      tensor(view.getLoc(), buffers.lookup(view.getGathered()), offset, view.getType()));
}

void StepLowering::startGather(AllGatherOp gather) {
  Location loc = gather.getLoc();
  UnitOp unit = unitOf(gather.getUnit());
  const UnitRegions &regions = layout.of(unit.getSymName());
  RankedTensorType gathered = gather.getType();
  Value full = allocBytes(loc, tensorBytes(gathered), kGatheredKind);
  Value shard = arenaBytes(loc, regions.params);
  int64_t shardBytes = regions.params.bytes;
  if (gathered.getElementType() != regions.paramsType) {
    // Mixed precision: the shard travels rounded to the gathered type, from
    // a buffer of its own that lives until the gather completes (an
    // offloaded unit's device copy is rounded already).
    RankedTensorType shardType = unit.getShardType().clone(regions.paramsType);
    RankedTensorType rounded = shardType.clone(gathered.getElementType());
    Value master = tensor(loc, shard, 0, shardType);
    shardBytes = tensorBytes(rounded);
    shard = allocBytes(loc, shardBytes, kCollectiveKind);
    materializeInto(loc, ConvertOp::create(b, loc, rounded, master), shard);
  }
  Value handle = start(loc, kAllGatherStart,
                       {bufferAddress(b, loc, shard), bufferAddress(b, loc, full),
                        i64Constant(b, loc, shardBytes),
                        i32Constant(b, loc, static_cast<int64_t>(Group::Shard))});
  handle.getDefiningOp()->setAttr(kCollectiveUnitAttr, unit.getSymNameAttr());
  startedGathers[gather] = {full, handle};
}

void StepLowering::lowerAllGather(AllGatherOp gather) {
  if (!startedGathers.count(gather))
    startGather(gather);
  auto [full, handle] = startedGathers.lookup(gather);
  wait(gather.getLoc(), handle);
  buffers[gather.getResult()] = full;
  // The next gathers start now, to overlap with this unit's compute (gathers
  // are lowered in block order, so this is number `gathersDone`).
  size_t position = gathersDone++;
  for (size_t ahead = 1; ahead <= static_cast<size_t>(prefetch); ++ahead)
    if (position + ahead < gathers.size() && !startedGathers.count(gathers[position + ahead]))
      startGather(gathers[position + ahead]);
}

void StepLowering::lowerFlatten(FlattenOp flatten) {
  Location loc = flatten.getLoc();
  UnitOp unit = unitOf(flatten.getUnit());
  RankedTensorType flatType = flatten.getType();
  Type elementType = flatType.getElementType();
  // The reduce-scatter of the previous unit's flat gradient completes (and
  // frees it) before this one is allocated: one flat gradient at a time.
  waitBefore(pendingReduceScatter, flatten);
  Value flat = allocBytes(loc, tensorBytes(flatType), kGradientKind);
  int64_t padding = flatType.getNumElements() - unit.getNumel();
  if (padding > 0) {
    Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(elementType));
    linalg::FillOp::create(b, loc, zero,
                           view(loc, flat, unit.getNumel() * elementBytes(elementType),
                                {padding}, elementType));
  }
  for (auto [param, grad] : llvm::zip_equal(unit.getMembers(), flatten.getGrads())) {
    auto type = llvm::cast<RankedTensorType>(grad.getType());
    Value slot = view(loc, flat, *param.getOffset() * elementBytes(elementType),
                      type.getShape(), elementType);
    // bf16 gradients widen exactly into an f32 flat gradient.
    if (type.getElementType() != elementType)
      grad = ConvertOp::create(b, loc, type.clone(elementType), grad);
    bufferization::MaterializeInDestinationOp::create(b, loc, TypeRange{}, grad, slot,
                                                      /*restrict=*/true, /*writable=*/true);
  }
  bindResult(flatten.getResult(), flat);
  flatGradientUnits[flat] = b.getStringAttr(flatten.getUnit());
}

void StepLowering::lowerReduceScatter(ReduceScatterOp reduce) {
  Location loc = reduce.getLoc();
  // A flat gradient has its buffer; a value computed from flat gradients (the
  // sum of the micro-batches' with accumulate = no_sync) is computed into a
  // flat gradient buffer of its own.
  Value input = reduce.getInput();
  Value inputBytes = buffers.lookup(input);
  if (!inputBytes) {
    auto flatType = llvm::cast<RankedTensorType>(input.getType());
    inputBytes = allocBytes(loc, tensorBytes(flatType), kGradientKind);
    materializeInto(loc, input, inputBytes);
  }
  RankedTensorType type = reduce.getType();
  Value shard = allocBytes(loc, tensorBytes(type), kCollectiveKind);
  Value handle =
      startReduceScatter(loc, inputBytes, shard, type, reduce.getReduction(), Group::Shard);
  if (StringAttr unit = flatGradientUnits.lookup(inputBytes))
    handle.getDefiningOp()->setAttr(kCollectiveUnitAttr, unit);
  reductionHandles[shard] = handle;
  // Backward goes on while the gradient travels.
  waitBeforeFirstUse(loc, handle, reduce.getResult(), pendingReduceScatter);
  bindResult(reduce.getResult(), shard);
}

Value StepLowering::startReduceScatter(Location loc, Value full, Value shard,
                                       RankedTensorType shardType, Reduction reduction,
                                       Group group) {
  return start(loc, kReduceScatterStart,
               {bufferAddress(b, loc, full), bufferAddress(b, loc, shard),
                i64Constant(b, loc, shardType.getNumElements()),
                i32Constant(b, loc, static_cast<int64_t>(runtimeDType(shardType.getElementType()))),
                i32Constant(b, loc, static_cast<int64_t>(reduction)),
                i32Constant(b, loc, static_cast<int64_t>(group))});
}

Value StepLowering::startAllReduce(Location loc, Value bytes, RankedTensorType type,
                                   Reduction reduction, Group group) {
  return start(loc, kAllReduceStart,
               {bufferAddress(b, loc, bytes), i64Constant(b, loc, type.getNumElements()),
                i32Constant(b, loc, static_cast<int64_t>(runtimeDType(type.getElementType()))),
                i32Constant(b, loc, static_cast<int64_t>(reduction)),
                i32Constant(b, loc, static_cast<int64_t>(group))});
}

void StepLowering::lowerAllReduce(Operation *reduce, Value input, Reduction reduction,
                                  Group group) {
  Location loc = reduce->getLoc();
  auto type = llvm::cast<RankedTensorType>(input.getType());
  // In place when the input has a buffer nobody reads afterwards.
  Value bytes = buffers.lookup(input);
  if (!bytes || !input.hasOneUse()) {
    bytes = allocBytes(loc, tensorBytes(type), kCollectiveKind);
    materializeInto(loc, input, bytes);
  }
  Value handle = startAllReduce(loc, bytes, type, reduction, group);
  waitBeforeFirstUse(loc, handle, reduce->getResult(0), pendingAllReduce);
  bindResult(reduce->getResult(0), bytes);
  reductionHandles[bytes] = handle;
}

/// The elements before dimension `dim` of `shape`: more than one when the
/// tensor ranks' blocks along `dim` are not contiguous.
static int64_t outerElements(ArrayRef<int64_t> shape, int64_t dim) {
  int64_t outer = 1;
  for (int64_t size : shape.take_front(dim))
    outer *= size;
  return outer;
}

/// `whole`'s shape with its dimension `dim` split into [ranks, dim / ranks].
static SmallVector<int64_t> splitShape(ArrayRef<int64_t> whole, int64_t dim, int64_t ranks) {
  SmallVector<int64_t> shape(whole.take_front(dim));
  shape.append({ranks, whole[dim] / ranks});
  shape.append(whole.begin() + dim + 1, whole.end());
  return shape;
}

/// The type of `whole`'s blocks along `dim` laid out rank-major:
/// [ranks, outer..., block, inner...], or `whole` when they lie so already.
static RankedTensorType blocksFirstType(RankedTensorType whole, int64_t dim, int64_t ranks) {
  if (outerElements(whole.getShape(), dim) == 1)
    return whole;
  SmallVector<int64_t> split = splitShape(whole.getShape(), dim, ranks);
  SmallVector<int64_t> permuted = {ranks};
  for (int64_t d = 0; d < static_cast<int64_t>(split.size()); ++d)
    if (d != dim)
      permuted.push_back(split[d]);
  return whole.clone(permuted);
}

Value StepLowering::blocksFirst(Location loc, Value whole, int64_t dim, int64_t ranks) {
  auto type = llvm::cast<RankedTensorType>(whole.getType());
  if (outerElements(type.getShape(), dim) == 1)
    return whole;
  SmallVector<int64_t> split = splitShape(type.getShape(), dim, ranks);
  Value reshaped = ReshapeOp::create(b, loc, type.clone(split), whole);
  // The ranks' axis first, the others in order.
  SmallVector<int64_t> permutation = {dim};
  for (int64_t d = 0; d < static_cast<int64_t>(split.size()); ++d)
    if (d != dim)
      permutation.push_back(d);
  return TransposeOp::create(b, loc, blocksFirstType(type, dim, ranks), reshaped, permutation);
}

Value StepLowering::blocksInPlace(Location loc, Value blocks, RankedTensorType whole, int64_t dim,
                                  int64_t ranks) {
  if (outerElements(whole.getShape(), dim) == 1)
    return blocks;
  SmallVector<int64_t> split = splitShape(whole.getShape(), dim, ranks);
  // The ranks' axis back before the block's dimension.
  SmallVector<int64_t> permutation;
  for (int64_t d = 1; d <= dim; ++d)
    permutation.push_back(d);
  permutation.push_back(0);
  for (int64_t d = dim + 1; d < static_cast<int64_t>(split.size()); ++d)
    permutation.push_back(d);
  Value transposed = TransposeOp::create(b, loc, whole.clone(split), blocks, permutation);
  return ReshapeOp::create(b, loc, whole, transposed);
}

/// The tensor ranks that split `whole` into `block` along `dim`.
static int64_t ranksOf(RankedTensorType whole, RankedTensorType block, int64_t dim) {
  return whole.getDimSize(dim) / block.getDimSize(dim);
}

Value StepLowering::arrangeBlocks(Location loc, Value whole, int64_t dim, int64_t ranks) {
  auto type = llvm::cast<RankedTensorType>(whole.getType());
  Value bytes = allocBytes(loc, tensorBytes(type), kCollectiveKind);
  materializeInto(loc, blocksFirst(loc, whole, dim, ranks), bytes);
  return bytes;
}

void StepLowering::lowerTensorReduceScatter(TensorReduceScatterOp scatter) {
  Location loc = scatter.getLoc();
  RankedTensorType block = scatter.getType();
  int64_t dim = scatter.getDim();
  Value full = arrangeBlocks(loc, scatter.getInput(), dim,
                             ranksOf(scatter.getInput().getType(), block, dim));
  Value shard = allocBytes(loc, tensorBytes(block), kCollectiveKind);
  Value handle = startReduceScatter(loc, full, shard, block, Reduction::Sum, Group::Tensor);
  waitBeforeFirstUse(loc, handle, scatter.getResult(), pendingTensorCollective);
  bindResult(scatter.getResult(), shard);
}

void StepLowering::lowerTensorAllGather(Operation *gather, Value input, int64_t dim) {
  Location loc = gather->getLoc();
  auto block = llvm::cast<RankedTensorType>(input.getType());
  auto whole = llvm::cast<RankedTensorType>(gather->getResult(0).getType());
  int64_t ranks = ranksOf(whole, block, dim);
  Value blockBytes = buffers.lookup(input);
  if (!blockBytes) {
    blockBytes = allocBytes(loc, tensorBytes(block), kCollectiveKind);
    materializeInto(loc, input, blockBytes);
  }
  Value full = allocBytes(loc, tensorBytes(whole), kCollectiveKind);
  Value handle = start(loc, kAllGatherStart,
                       {bufferAddress(b, loc, blockBytes), bufferAddress(b, loc, full),
                        i64Constant(b, loc, tensorBytes(block)),
                        i32Constant(b, loc, static_cast<int64_t>(Group::Tensor))});
  // The blocks back in place where the result is first read, after the wait,
  // so that what comes before overlaps with the gather and nothing reads the
  // buffer earlier (a product's operand widened where its value is made).
  OpBuilder::InsertionGuard guard(b);
  waitBeforeFirstUse(loc, handle, gather->getResult(0), pendingTensorCollective);
  Value blocks = tensor(loc, full, 0, blocksFirstType(whole, dim, ranks));
  gather->getResult(0).replaceAllUsesWith(blocksInPlace(loc, blocks, whole, dim, ranks));
}

Value StepLowering::ownBlock(Location loc, Value blocks, RankedTensorType block, int64_t count) {
  int64_t ranks = tensorRanks();
  func::FuncOp groupRank = declareRuntimeFunction(
      module, kGroupRank, FunctionType::get(b.getContext(), {b.getI32Type()}, {b.getI32Type()}));
  Value rank =
      func::CallOp::create(b, loc, groupRank,
                           ValueRange{i32Constant(b, loc, static_cast<int64_t>(Group::Tensor))})
          .getResult(0);
  // Rank t's block is t * count / ranks: consecutive ranks share one when
  // there are fewer blocks than ranks (the verifier: count divides ranks).
  Value index = arith::IndexCastOp::create(b, loc, b.getIndexType(), rank);
  if (ranks != count)
    index = arith::DivUIOp::create(b, loc, index,
                                   arith::ConstantIndexOp::create(b, loc, ranks / count));
  Value offset = arith::MulIOp::create(b, loc, index,
                                       arith::ConstantIndexOp::create(b, loc, tensorBytes(block)));
  return memref::ViewOp::create(b, loc, MemRefType::get(block.getShape(), block.getElementType()),
                                blocks, offset, ValueRange{});
}

void StepLowering::lowerTensorChunk(TensorChunkOp chunk) {
  Location loc = chunk.getLoc();
  RankedTensorType block = chunk.getType();
  int64_t dim = chunk.getDim(), count = ranksOf(chunk.getInput().getType(), block, dim);
  Value full = arrangeBlocks(loc, chunk.getInput(), dim, count);
  Value own = ownBlock(loc, full, block, count);
  Value bytes = allocBytes(loc, tensorBytes(block), kCollectiveKind);
  materializeInto(
      loc, bufferization::ToTensorOp::create(b, loc, block, own, b.getUnitAttr(), UnitAttr()),
      bytes);
  bindResult(chunk.getResult(), bytes);
}

void StepLowering::lowerTensorUnchunk(TensorUnchunkOp unchunk) {
  Location loc = unchunk.getLoc();
  RankedTensorType block = unchunk.getInput().getType(), whole = unchunk.getType();
  int64_t dim = unchunk.getDim(), count = ranksOf(whole, block, dim);
  if (count == tensorRanks())
    return lowerTensorAllGather(unchunk, unchunk.getInput(), dim);
  // Fewer blocks than ranks: each block the sum of the ranks that share it,
  // an all-reduce of every rank's block in its place and zeros elsewhere. The
  // block goes through a buffer of its own: computed in place into the
  // zeroed buffer (what bufferization does with a value only copied), the
  // zeros would be written after it.
  Value own = allocBytes(loc, tensorBytes(block), kCollectiveKind);
  materializeInto(loc, unchunk.getInput(), own);
  Value full = allocBytes(loc, tensorBytes(whole), kCollectiveKind);
  Type element = whole.getElementType();
  linalg::FillOp::create(b, loc,
                         arith::ConstantOp::create(b, loc, b.getZeroAttr(element)).getResult(),
                         view(loc, full, 0, {whole.getNumElements()}, element));
  bufferization::MaterializeInDestinationOp::create(b, loc, TypeRange{}, tensor(loc, own, 0, block),
                                                    ownBlock(loc, full, block, count),
                                                    /*restrict=*/true, /*writable=*/true);
  Value handle = startAllReduce(loc, full, whole, Reduction::Sum, Group::Tensor);
  OpBuilder::InsertionGuard guard(b);
  waitBeforeFirstUse(loc, handle, unchunk.getResult(), pendingTensorCollective);
  Value blocks = tensor(loc, full, 0, blocksFirstType(whole, dim, count));
  unchunk.getResult().replaceAllUsesWith(blocksInPlace(loc, blocks, whole, dim, count));
}

LogicalResult StepLowering::lowerUpdate(UpdateOp update, Value stepNumber,
                                        Value learningRate) {
  Location loc = update.getLoc();
  UnitOp unit = unitOf(update.getParam());
  if (!unit)
    return update.emitOpError("updates a parameter, not a unit's shard; run "
                              "fsdp-partition and fsdp-insert-collectives first");
  const UnitRegions &regions = layout.of(unit.getSymName());
  if (regions.offloaded()) {
    offloaded.startOffloadedUpdate(update, regions, stepNumber, learningRate);
    return success();
  }
  RankedTensorType type = unit.getShardType();
  auto shardView = [&](ArenaRegion region) {
    return view(loc, arena, region.offset, type.getShape(), type.getElementType());
  };
  UpdateOperands operands;
  operands.grad = view(loc, gradientShard(update.getGrad(), unit), 0, type.getShape(),
                       type.getElementType());
  operands.param = shardView(regions.params);
  for (const StateSlot &slot : regions.state)
    operands.state.push_back(shardView(slot.region));
  operands.step = stepNumber;
  operands.lr = learningRate;
  // On the device, read where the runtime wrote them before the step
  // (fsdp-cuda-sink-host-reads moves these loads into the kernels).
  if (std::optional<ArenaRegion> scalars = layout.deviceScalars) {
    operands.step = memref::LoadOp::create(
        b, loc, view(loc, arena, scalars->offset + ArenaLayout::kStepOffset, {}, b.getI64Type()));
    operands.lr = memref::LoadOp::create(
        b, loc, view(loc, arena, scalars->offset + ArenaLayout::kLrOffset, {}, b.getF32Type()));
    operands.stepFactors = stepFactorsOf(loc, update.getOptimizer(), operands.step, operands.lr);
  }
  if (Value coefficient = update.getCoefficient())
    operands.coefficient = tensor::ExtractOp::create(b, loc, coefficient);
  buildOptimizerUpdate(b, loc, update.getOptimizer(), operands);
  return success();
}

SmallVector<Value> StepLowering::stepFactorsOf(Location loc, OptimizerAttrInterface optimizer,
                                               Value step, Value lr) {
  unsigned count = stepFactorCount(optimizer);
  if (!layout.deviceScalars || count == 0 || count > ArenaLayout::kStepFactorSlots ||
      (deviceStepFactors && deviceStepFactors != optimizer))
    return {};
  SmallVector<Value> factors;
  for (unsigned i = 0; i < count; ++i)
    factors.push_back(view(loc, arena,
                           layout.deviceScalars->offset + ArenaLayout::kStepFactorsOffset +
                               i * static_cast<int64_t>(sizeof(float)),
                           {}, b.getF32Type()));
  // Right before the first update: after the gradient norm's reduction, whose
  // kernel computes them on one rank (fsdp-cuda-form-kernels).
  if (!deviceStepFactors) {
    buildStepFactors(b, loc, optimizer, step, lr, factors);
    deviceStepFactors = optimizer;
  }
  return factors;
}

Value StepLowering::tagGradientShard(Value bytes, UnitOp unit) {
  Operation *alloc = bytes.getDefiningOp();
  alloc->setAttr(kBufferKindAttr, b.getStringAttr(kGradientShardKind));
  alloc->setAttr(kGradientOfAttr, b.getStringAttr(unit.getSymName()));
  shardsWithGradient.insert(unit);
  // The all-reduce that left it there (no_shard, or the replicas' of a
  // hybrid plan) moved this unit's gradient: a timed-out wait names it.
  if (Value handle = reductionHandles.lookup(bytes);
      handle && !handle.getDefiningOp()->hasAttr(kCollectiveUnitAttr))
    handle.getDefiningOp()->setAttr(kCollectiveUnitAttr, unit.getSymNameAttr());
  return bytes;
}

Value StepLowering::gradientShard(Value grad, UnitOp unit) {
  // The buffer a collective or fsdp.flatten left it in, when it has the
  // shard's type.
  if (Value bytes = buffers.lookup(grad); bytes && grad.getType() == unit.getShardType())
    return tagGradientShard(bytes, unit);
  // Else (a conversion from reduce_dtype, a mean over micro-batches) into a
  // buffer of its own where the gradient is computed, so that it is computed
  // there (eliminate-empty-tensors) and lives no longer than it did.
  OpBuilder::InsertionGuard guard(b);
  Operation *producer = grad.getDefiningOp();
  if (producer)
    b.setInsertionPoint(producer);
  Location loc = grad.getLoc();
  Value bytes = tagGradientShard(
      allocBytes(loc, tensorBytes(unit.getShardType()), kGradientShardKind), unit);
  if (producer)
    b.setInsertionPointAfter(producer);
  materializeInto(loc, grad, bytes);
  return bytes;
}

void StepLowering::zeroGradientShards() {
  // A trainable unit none of whose parameters reaches the loss has a zero
  // gradient, which the trainer reports after the step like any other.
  b.setInsertionPoint(body.getTerminator());
  for (const UnitRegions &regions : layout.units) {
    if (!regions.trainable || regions.offloaded() || shardsWithGradient.contains(regions.unit))
      continue;
    Location loc = regions.unit.getLoc();
    RankedTensorType type = regions.unit.getShardType();
    Value bytes =
        tagGradientShard(allocBytes(loc, tensorBytes(type), kGradientShardKind), regions.unit);
    Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(type.getElementType()));
    linalg::FillOp::create(b, loc, zero,
                           view(loc, bytes, 0, type.getShape(), type.getElementType()));
  }
}

/// A reduced bf16 shard is widened for the f32 optimizer (reduce_dtype =
/// bf16). The widening moves to its own first reader: the reduction's wait
/// goes before the widening, which would otherwise follow the start at once,
/// and nothing of the reduction would overlap with the rest of backward.
static void sinkWidenings(Block &body) {
  for (ReduceScatterOp reduce : body.getOps<ReduceScatterOp>())
    for (Operation *user : llvm::make_early_inc_range(reduce.getResult().getUsers())) {
      auto widen = dyn_cast<ConvertOp>(user);
      if (!widen || widen->getBlock() != &body)
        continue;
      Operation *first = nullptr;
      for (Operation *reader : widen.getResult().getUsers()) {
        Operation *top = body.findAncestorOpInBlock(*reader);
        if (!first || top->isBeforeInBlock(first))
          first = top;
      }
      if (first && widen->isBeforeInBlock(first))
        widen->moveBefore(first);
    }
}

LogicalResult StepLowering::lower(Value stepNumber, Value learningRate) {
  sinkWidenings(body);
  gathers = llvm::to_vector(body.getOps<AllGatherOp>());
  SmallVector<Operation *> lowered;
  // The ops as they are now: lowering one moves waits of earlier ones, and
  // a walk would revisit what they move past.
  SmallVector<Operation *> ops =
      llvm::to_vector(llvm::make_pointer_range(body.without_terminator()));
  for (Operation *opPointer : ops) {
    Operation &op = *opPointer;
    b.setInsertionPoint(&op);
    LogicalResult result = success();
    if (auto use = dyn_cast<UseOp>(op))
      result = lowerUse(use);
    else if (auto gather = dyn_cast<AllGatherOp>(op))
      lowerAllGather(gather);
    else if (auto paramView = dyn_cast<ParamViewOp>(op))
      lowerView(paramView);
    else if (auto flatten = dyn_cast<FlattenOp>(op))
      lowerFlatten(flatten);
    else if (auto reduce = dyn_cast<ReduceScatterOp>(op))
      lowerReduceScatter(reduce);
    else if (auto reduce = dyn_cast<AllReduceOp>(op))
      lowerAllReduce(reduce, reduce.getInput(), reduce.getReduction(), reduce.getGroup());
    else if (auto sum = dyn_cast<TensorSumOp>(op))
      lowerAllReduce(sum, sum.getInput(), Reduction::Sum, Group::Tensor);
    else if (auto copy = dyn_cast<TensorCopyOp>(op))
      // Every rank holds the value already; only its gradient communicates.
      copy.getResult().replaceAllUsesWith(copy.getInput());
    else if (auto scatter = dyn_cast<TensorReduceScatterOp>(op))
      lowerTensorReduceScatter(scatter);
    else if (auto gather = dyn_cast<TensorAllGatherOp>(op))
      lowerTensorAllGather(gather, gather.getInput(), gather.getDim());
    else if (auto unchunk = dyn_cast<TensorUnchunkOp>(op))
      lowerTensorUnchunk(unchunk);
    else if (auto chunk = dyn_cast<TensorChunkOp>(op))
      lowerTensorChunk(chunk);
    else if (auto embedding = dyn_cast<TensorEmbeddingOp>(op))
      lowerTensorEmbedding(embedding);
    else if (auto grad = dyn_cast<TensorEmbeddingGradOp>(op))
      lowerTensorEmbeddingGrad(grad);
    else if (auto loss = dyn_cast<TensorCrossEntropyOp>(op))
      lowerTensorCrossEntropy(loss);
    else if (auto grad = dyn_cast<TensorCrossEntropyGradOp>(op))
      lowerTensorCrossEntropyGrad(grad);
    else if (auto update = dyn_cast<UpdateOp>(op))
      result = lowerUpdate(update, stepNumber, learningRate);
    else if (!isa<FreeOp>(op))
      continue;
    if (failed(result))
      return failure();
    lowered.push_back(&op);
  }
  zeroGradientShards();
  offloaded.emitOffloadedUpdates();
  // Gathered and flat buffers are read only by the ops lowered here.
  for (Operation *op : lowered)
    op->dropAllReferences();
  for (Operation *op : lowered) {
    op->dropAllUses();
    op->erase();
  }
  // The device no longer widens what offloaded updates widen on the host.
  offloaded.eraseHostWidenings();
  return success();
}
