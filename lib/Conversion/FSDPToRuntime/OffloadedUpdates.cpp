//===- OffloadedUpdates.cpp - offload = optimizer's part of the step ------===//
//
// With `offload = optimizer` (docs/Offload.md) a unit's update leaves the
// device: its gradient shard is copied to the host arena as soon as the
// reduction that completes it is waited for, the host applies the optimizer
// to the f32 master there (a task of the runtime's host threads), and the new
// shard is copied back in param_dtype. StepLowering lowers the rest, the
// device's step, and hands these updates over as it meets them.
//
//===----------------------------------------------------------------------===//

#include "OffloadedUpdates.h"

#include "OptimizerUpdate.h"

#include "Utils/RuntimeABI.h"
#include "Utils/RuntimeCalls.h"
#include "fsdp/IR/BufferKinds.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace mlir::fsdp;

Operation *OffloadedUpdates::completionOf(Value bytes) {
  if (Value handle = deviceStep.reductionHandleOf(bytes))
    for (Operation *user : handle.getUsers())
      if (auto call = dyn_cast<func::CallOp>(user); call && call.getCallee() == kWait)
        return call;
  // Else the last op before here that reads or writes it (through views).
  Operation *last = bytes.getDefiningOp();
  SmallVector<Value> worklist = {bytes};
  while (!worklist.empty())
    for (Operation *user : worklist.pop_back_val().getUsers()) {
      Operation *top = body.findAncestorOpInBlock(*user);
      if (top && top->isBeforeInBlock(&*b.getInsertionPoint()) && last->isBeforeInBlock(top))
        last = top;
      if (isa<memref::ViewOp>(user))
        worklist.push_back(user->getResult(0));
    }
  return last;
}

void OffloadedUpdates::startOffloadedUpdate(UpdateOp update, const UnitRegions &regions,
                                            Value stepNumber, Value learningRate) {
  Location loc = update.getLoc();
  UnitOp unit = regions.unit;
  // A reduced bf16 shard travels as it is (half the bytes) and is widened on
  // the host.
  Value grad = update.getGrad(), bytes;
  if (auto widening = grad.getDefiningOp<ConvertOp>())
    if (Value reduced = deviceStep.bufferOf(widening.getInput());
        reduced && deviceStep.reductionHandleOf(reduced)) {
      bytes = reduced;
      grad = widening.getInput();
      hostWidenings.insert(widening);
    }
  if (!bytes) {
    // Its own buffer, but not the gradient shard the trainer reads: that is
    // the host's copy.
    bytes = deviceStep.gradientShard(grad, unit);
    bytes.getDefiningOp()->removeAttr(kGradientOfAttr);
  }
  Type gradType = llvm::cast<RankedTensorType>(grad.getType()).getElementType();
  gradTypesOnHost[unit.getSymName()] = gradType;
  // The copy starts as soon as the gradient is complete: it travels while
  // backward goes on.
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointAfter(completionOf(bytes));
  Value handle =
      deviceStep.start(loc, kCopyToHostStart,
                       {bufferAddress(b, loc, deviceStep.hostArenaBytes(loc, regions.host->grad)),
                        bufferAddress(b, loc, bytes),
                        i64Constant(b, loc, unit.getShard() * elementBytes(gradType))});
  handle.getDefiningOp()->setAttr(kCollectiveUnitAttr, unit.getSymNameAttr());
  offloadedUpdates.push_back({&regions, update.getOptimizer(), handle, gradType,
                              update.getCoefficient(), stepNumber, learningRate});
  hoistSquaredNorm(update.getGrad(), handle.getDefiningOp());
}

/// Moves `op` right after `after`, with what it reads that is defined later
/// still (views of the buffer it reads, constants, a widening): `after` then
/// points at `op`. False, with nothing moved, when an operand comes from
/// another op.
static bool hoistWithOperands(Operation *op, Operation *&after) {
  Block *block = after->getBlock();
  SmallVector<Operation *> chain;
  SmallVector<Operation *> worklist = {op};
  while (!worklist.empty()) {
    Operation *next = worklist.pop_back_val();
    if (llvm::is_contained(chain, next))
      continue;
    chain.push_back(next);
    for (Value operand : next->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (!def || def->getBlock() != block || def->isBeforeInBlock(after) || def == after)
        continue;
      if (!isa<arith::ConstantOp, memref::ViewOp, bufferization::ToTensorOp, ConvertOp>(def))
        return false;
      worklist.push_back(def);
    }
  }
  // Definitions before their users, as they were.
  llvm::sort(chain, [](Operation *x, Operation *y) { return x->isBeforeInBlock(y); });
  for (Operation *moved : chain) {
    moved->moveAfter(after);
    after = moved;
  }
  return true;
}

void OffloadedUpdates::hoistSquaredNorm(Value grad, Operation *after) {
  // `reduce_sum(mul(g, g))`, g the gradient or its widening: what clipping
  // reads of this unit. Computed here, it is one fused reduction, and the
  // device's copy of the gradient dies with its copy to the host instead of
  // living until the norm of all gradients at the end of the step.
  for (Operation *user : llvm::make_early_inc_range(grad.getUsers())) {
    auto square = dyn_cast<MulOp>(user);
    if (!square || square.getLhs() != grad || square.getRhs() != grad ||
        !square->hasOneUse() || !isa<ReduceSumOp>(*square->user_begin()) ||
        !after->isBeforeInBlock(square))
      continue;
    Operation *sum = *square->user_begin();
    if (hoistWithOperands(square, after))
      sum->moveAfter(after);
  }
}

func::FuncOp OffloadedUpdates::buildHostTask(const OffloadedUpdate &pending, bool clipped) {
  const UnitRegions &regions = *pending.regions;
  const HostRegions &host = *regions.host;
  UnitOp unit = regions.unit;
  Location loc = unit.getLoc();
  MLIRContext *ctx = b.getContext();
  Type f32 = b.getF32Type(), i64 = b.getI64Type(), index = b.getIndexType();
  auto type = FunctionType::get(ctx, {hostArena.getType(), f32, i64, f32, index, index}, {});
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(module.getBody());
  auto task = func::FuncOp::create(b, loc, ("fsdp_host_update_" + unit.getSymName()).str(), type);
  SymbolTable(module).insert(task); // unique among the module's symbols
  task.setPrivate();
  Block *entry = task.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value arena = entry->getArgument(0), begin = entry->getArgument(4);
  Value size = arith::SubIOp::create(b, loc, entry->getArgument(5), begin);
  RankedTensorType shard = unit.getShardType();
  // Elements [begin, end) of a region of the host arena.
  auto chunk = [&](ArenaRegion region, Type elementType) -> Value {
    Value whole = deviceStep.view(loc, arena, region.offset, shard.getShape(), elementType);
    return memref::SubViewOp::create(b, loc, whole, ArrayRef<OpFoldResult>{begin},
                                     ArrayRef<OpFoldResult>{size},
                                     ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
  };
  UpdateOperands operands;
  operands.grad = chunk(host.grad, pending.gradType);
  operands.param = chunk(host.master, shard.getElementType());
  for (const StateSlot &slot : regions.state)
    operands.state.push_back(chunk(slot.region, shard.getElementType()));
  operands.lr = entry->getArgument(1);
  operands.step = entry->getArgument(2);
  if (clipped)
    operands.coefficient = entry->getArgument(3);
  if (host.rounded.bytes > 0)
    operands.rounded = chunk(host.rounded, regions.paramsType);
  buildOptimizerUpdate(b, loc, pending.optimizer, operands);
  func::ReturnOp::create(b, loc);
  return task;
}

Value OffloadedUpdates::emitHostUpdate(const OffloadedUpdate &pending, Value coefficient) {
  const UnitRegions &regions = *pending.regions;
  const HostRegions &host = *regions.host;
  Location loc = regions.unit.getLoc();
  // The update runs on the host's threads, a chunk of the shard each.
  func::FuncOp task = buildHostTask(pending, static_cast<bool>(coefficient));
  Value function = func::ConstantOp::create(b, loc, task.getFunctionType(), task.getSymName());
  Value scale = coefficient ? coefficient
                            : arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0)).getResult();
  SmallVector<Value> args = {function, bufferAddress(b, loc, hostArena), pending.learningRate,
                             pending.stepNumber, scale,
                             i64Constant(b, loc, regions.unit.getShard())};
  func::FuncOp parallel = declareRuntimeFunction(
      module, kHostParallel,
      FunctionType::get(b.getContext(), ValueRange(args).getTypes(), {}));
  func::CallOp::create(b, loc, parallel, args)->setAttr(kCollectiveUnitAttr,
                                                         regions.unit.getSymNameAttr());
  ArenaRegion back = host.rounded.bytes > 0 ? host.rounded : host.master;
  Value copy = deviceStep.start(loc, kCopyToDeviceStart,
                                {bufferAddress(b, loc, deviceStep.arenaBytes(loc, regions.params)),
                                 bufferAddress(b, loc, deviceStep.hostArenaBytes(loc, back)),
                                 i64Constant(b, loc, back.bytes)});
  copy.getDefiningOp()->setAttr(kCollectiveUnitAttr, regions.unit.getSymNameAttr());
  return copy;
}

void OffloadedUpdates::emitOffloadedUpdates() {
  if (offloadedUpdates.empty())
    return;
  llvm::sort(offloadedUpdates, [](const OffloadedUpdate &x, const OffloadedUpdate &y) {
    return x.copyHandle.getDefiningOp()->isBeforeInBlock(y.copyHandle.getDefiningOp());
  });
  // The host waits for each gradient right before the next one starts to
  // travel (its device buffer is free then: one in flight, as for
  // reductions), and updates that unit at once, while the device goes on
  // with the backward work launched before. With clipping every update needs
  // the coefficient of all gradients: they run at the end of the step.
  bool clipped = static_cast<bool>(offloadedUpdates.front().coefficient);
  Operation *end = body.getTerminator();
  SmallVector<Value> copiesBack;
  for (auto [index, pending] : llvm::enumerate(offloadedUpdates)) {
    b.setInsertionPoint(index + 1 < offloadedUpdates.size()
                            ? offloadedUpdates[index + 1].copyHandle.getDefiningOp()
                            : end);
    deviceStep.wait(pending.regions->unit.getLoc(), pending.copyHandle);
    if (!clipped)
      copiesBack.push_back(emitHostUpdate(pending, Value()));
  }
  b.setInsertionPoint(end);
  if (clipped) {
    // The coefficient reaches the host once.
    Location loc = offloadedUpdates.front().regions->unit.getLoc();
    Value device = deviceStep.allocBytes(loc, sizeof(float), kCollectiveKind);
    deviceStep.materializeInto(loc, offloadedUpdates.front().coefficient, device);
    ArenaRegion region = layout.hostCoefficient;
    deviceStep.wait(
        loc, deviceStep.start(loc, kCopyToHostStart,
                              {bufferAddress(b, loc, deviceStep.hostArenaBytes(loc, region)),
                               bufferAddress(b, loc, device), i64Constant(b, loc, region.bytes)}));
    auto coefficient = memref::LoadOp::create(
        b, loc, deviceStep.view(loc, hostArena, region.offset, {}, b.getF32Type()), ValueRange{});
    coefficient->setAttr(kOnHostAttr, b.getUnitAttr());
    for (const OffloadedUpdate &pending : offloadedUpdates)
      copiesBack.push_back(emitHostUpdate(pending, coefficient));
  }
  // The new shards are on the device before the step returns.
  for (Value copy : copiesBack)
    deviceStep.wait(copy.getLoc(), copy);
}

void OffloadedUpdates::eraseHostWidenings() {
  for (Operation *widening : llvm::make_early_inc_range(hostWidenings))
    if (widening->use_empty())
      widening->erase();
}
