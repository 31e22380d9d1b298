//===- FSDPToRuntime.cpp - convert-fsdp-to-runtime ------------------------===//
//
// Turns `@train_step(inputs..., step, lr) -> loss` into
// `fsdp_train_step(arena, step, lr) -> f32` on one arena laid out by
// ArenaLayout, and records the layout in the `fsdp_manifest` global.
//
//===----------------------------------------------------------------------===//

#include "ArenaLayout.h"
#include "InputRoles.h"
#include "Manifest.h"
#include "OptimizerUpdate.h"

#include "fsdp/Conversion/BufferKinds.h"
#include "fsdp/Conversion/Passes.h"
#include "fsdp/Conversion/RuntimeABI.h"
#include "fsdp/IR/FSDPOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::fsdp {
#define GEN_PASS_DEF_CONVERTFSDPTORUNTIMEPASS
#include "fsdp/Conversion/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;
using namespace mlir::fsdp;

namespace {



/// Lowers the step's fsdp ops onto buffers: persistent ones in the arena,
/// transient ones (gathered units, flat gradients) as allocations that
/// fsdp-assign-buffers places later. Each collective is a start/wait pair of
/// runtime calls.
class StepLowering {
public:
  /// `prefetch`: how many gathers start ahead of the one being waited for.
  StepLowering(ModuleOp module, const ArenaLayout &layout, Value arena, Block &body,
               int64_t prefetch)
      : module(module), layout(layout), arena(arena), body(body),
        b(OpBuilder::atBlockBegin(&body)), prefetch(prefetch) {}

  LogicalResult lower(Value stepNumber, Value learningRate);

  /// A byte buffer of the arena.
  Value arenaBytes(Location loc, ArenaRegion region) { return bytesView(loc, arena, region.offset, region.bytes); }
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
  Value bytesView(Location loc, Value bytes, int64_t offset, int64_t size) {
    return view(loc, bytes, offset, {size}, b.getI8Type());
  }
  /// A transient buffer, tagged with what it holds for fsdp-assign-buffers'
  /// accounting.
  Value allocBytes(Location loc, int64_t size, StringRef kind) {
    auto alloc = memref::AllocOp::create(b, loc, MemRefType::get({size}, b.getI8Type()),
                                         b.getI64IntegerAttr(ArenaLayout::kAlignment));
    alloc->setAttr(kBufferKindAttr, b.getStringAttr(kind));
    return alloc;
  }
  /// Starts a collective; returns the handle to wait for.
  Value start(Location loc, StringRef name, ValueRange args);
  void wait(Location loc, Value handle);
  /// Waits for a collective right before the first reader of its result.
  void waitBeforeFirstUse(Location loc, Value handle, Value result);
  /// Allocates a unit's gathered buffer and starts filling it, here.
  void startGather(AllGatherOp gather);
  /// Replaces `result` by a tensor of the buffer that now holds it, and
  /// returns that tensor.
  Value bindResult(Value result, Value bytes);
  UnitOp unitOf(StringRef name) { return module.lookupSymbol<UnitOp>(name); }

  LogicalResult lowerUse(UseOp use);
  void lowerAllGather(AllGatherOp gather);
  void lowerFlatten(FlattenOp flatten);
  LogicalResult lowerReduceScatter(ReduceScatterOp reduce);
  void lowerAllReduce(AllReduceOp reduce);
  LogicalResult lowerUpdate(UpdateOp update, Value stepNumber, Value learningRate);

  ModuleOp module;
  const ArenaLayout &layout;
  Value arena;
  Block &body;
  OpBuilder b;
  /// Where the values of collectives live: a byte buffer.
  llvm::DenseMap<Value, Value> buffers;
  /// Gradients already in a unit's gradient shard.
  llvm::DenseSet<Value> inGradientShard;
  /// The unit of each flat gradient.
  llvm::DenseMap<Value, StringRef> flatUnits;
  llvm::DenseMap<ParamOp, Value> paramTensors;
  int64_t prefetch;
  /// The step's gathers in order, and those started ahead (buffer, handle).
  SmallVector<AllGatherOp> gathers;
  llvm::DenseMap<Operation *, std::pair<Value, Value>> startedGathers;
};

Value StepLowering::start(Location loc, StringRef name, ValueRange args) {
  auto declare = [&](StringRef callee, TypeRange inputs, TypeRange results) {
    if (auto existing = module.lookupSymbol<func::FuncOp>(callee))
      return existing;
    OpBuilder top = OpBuilder::atBlockEnd(module.getBody());
    auto decl = func::FuncOp::create(top, loc, callee,
                                     FunctionType::get(b.getContext(), inputs, results));
    decl.setPrivate();
    return decl;
  };
  declare(kWait, {b.getI32Type()}, {});
  func::FuncOp callee = declare(name, ValueRange(args).getTypes(), {b.getI32Type()});
  return func::CallOp::create(b, loc, callee, args).getResult(0);
}

void StepLowering::wait(Location loc, Value handle) {
  func::CallOp::create(b, loc, module.lookupSymbol<func::FuncOp>(kWait), handle);
}

void StepLowering::waitBeforeFirstUse(Location loc, Value handle, Value result) {
  SmallVector<Operation *> users;
  for (Operation *user : result.getUsers())
    users.push_back(body.findAncestorOpInBlock(*user));
  Operation *first = body.getTerminator();
  for (Operation *user : users)
    if (user->isBeforeInBlock(first))
      first = user;
  b.setInsertionPoint(first);
  wait(loc, handle);
}

Value StepLowering::bindResult(Value result, Value bytes) {
  auto type = llvm::cast<RankedTensorType>(result.getType());
  Value value = tensor(result.getLoc(), bytes, 0, type);
  result.replaceAllUsesWith(value);
  buffers[value] = bytes;
  return value;
}

/// The address of a buffer, as the runtime's C declarations take it. (A
/// memref argument would need one declaration per buffer size.)
static Value pointerTo(OpBuilder &b, Location loc, Value buffer) {
  Value address = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, buffer);
  Value address64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), address);
  return LLVM::IntToPtrOp::create(b, loc, LLVM::LLVMPointerType::get(b.getContext()),
                                  address64);
}

static Value i32Constant(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(value));
}
static Value i64Constant(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(value));
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
    int64_t elementBytes = tensorBytes(param.getTensorType()) /
                           param.getTensorType().getNumElements();
    value = tensor(param.getLoc(), arena,
                   regions.params.offset + *param.getOffset() * elementBytes,
                   param.getTensorType());
  }
  use.replaceAllUsesWith(value);
  return success();
}

void StepLowering::startGather(AllGatherOp gather) {
  Location loc = gather.getLoc();
  UnitOp unit = unitOf(gather.getUnit());
  const UnitRegions &regions = layout.of(unit.getSymName());
  Value full = allocBytes(loc, tensorBytes(unit.getFlatType()), kGatheredKind);
  Value shard = arenaBytes(loc, regions.params);
  Value handle = start(loc, kAllGatherStart,
                       {pointerTo(b, loc, shard), pointerTo(b, loc, full),
                        i64Constant(b, loc, regions.params.bytes),
                        i32Constant(b, loc, static_cast<int64_t>(Group::Shard))});
  startedGathers[gather] = {full, handle};
}

void StepLowering::lowerAllGather(AllGatherOp gather) {
  if (!startedGathers.count(gather))
    startGather(gather);
  auto [full, handle] = startedGathers.lookup(gather);
  wait(gather.getLoc(), handle);
  buffers[gather.getResult()] = full;
  // The next gathers start now, to overlap with this unit's compute.
  auto position = llvm::find(gathers, gather) - gathers.begin();
  for (int64_t ahead = 1; ahead <= prefetch; ++ahead)
    if (position + ahead < static_cast<int64_t>(gathers.size()) &&
        !startedGathers.count(gathers[position + ahead]))
      startGather(gathers[position + ahead]);
}

void StepLowering::lowerFlatten(FlattenOp flatten) {
  Location loc = flatten.getLoc();
  UnitOp unit = unitOf(flatten.getUnit());
  Type elementType = unit.getElementType();
  int64_t elementBytes = elementType.getIntOrFloatBitWidth() / 8;
  // With one shard the flat gradient is the gradient shard: write it there.
  Value flat = unit.getRanks() == 1
                   ? arenaBytes(loc, layout.of(unit.getSymName()).grads)
                   : allocBytes(loc, tensorBytes(unit.getFlatType()), kGradientKind);
  int64_t padding = unit.getFlatType().getNumElements() - unit.getNumel();
  if (padding > 0) {
    Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(elementType));
    linalg::FillOp::create(b, loc, zero,
                           view(loc, flat, unit.getNumel() * elementBytes, {padding},
                                elementType));
  }
  for (auto [param, grad] : llvm::zip_equal(unit.getMembers(), flatten.getGrads())) {
    auto type = llvm::cast<RankedTensorType>(grad.getType());
    Value slot = view(loc, flat, *param.getOffset() * elementBytes, type.getShape(),
                      elementType);
    bufferization::MaterializeInDestinationOp::create(b, loc, TypeRange{}, grad, slot,
                                                      /*restrict=*/true, /*writable=*/true);
  }
  Value value = bindResult(flatten.getResult(), flat);
  flatUnits[value] = unit.getSymName();
  if (unit.getRanks() == 1)
    inGradientShard.insert(value);
}

LogicalResult StepLowering::lowerReduceScatter(ReduceScatterOp reduce) {
  Location loc = reduce.getLoc();
  StringRef unit = flatUnits.lookup(reduce.getInput());
  if (unit.empty())
    return reduce.emitOpError("reduces a value no fsdp.flatten produced; the CPU target "
                              "reduce-scatters flat gradients only");
  const UnitRegions &regions = layout.of(unit);
  Value shard = arenaBytes(loc, regions.grads);
  Value handle =
      start(loc, kReduceScatterStart,
            {pointerTo(b, loc, buffers.lookup(reduce.getInput())), pointerTo(b, loc, shard),
             i64Constant(b, loc, reduce.getType().getNumElements()),
             i32Constant(b, loc, static_cast<int64_t>(reduce.getReduction())),
             i32Constant(b, loc, static_cast<int64_t>(Group::Shard))});
  // Backward goes on while the gradient travels.
  waitBeforeFirstUse(loc, handle, reduce.getResult());
  inGradientShard.insert(bindResult(reduce.getResult(), shard));
  return success();
}

void StepLowering::lowerAllReduce(AllReduceOp reduce) {
  Location loc = reduce.getLoc();
  Value input = reduce.getInput();
  auto type = llvm::cast<RankedTensorType>(input.getType());
  // In place when the input has a buffer nobody reads afterwards.
  Value bytes = buffers.lookup(input);
  bool inShard = false;
  if (!bytes || !input.hasOneUse()) {
    bytes = allocBytes(loc, tensorBytes(type), kCollectiveKind);
    bufferization::MaterializeInDestinationOp::create(
        b, loc, TypeRange{}, input, view(loc, bytes, 0, type.getShape(), type.getElementType()),
        /*restrict=*/true, /*writable=*/true);
  } else {
    inShard = inGradientShard.contains(input);
  }
  Value handle =
      start(loc, kAllReduceStart,
            {pointerTo(b, loc, bytes), i64Constant(b, loc, type.getNumElements()),
             i32Constant(b, loc, static_cast<int64_t>(reduce.getReduction())),
             i32Constant(b, loc, static_cast<int64_t>(reduce.getGroup()))});
  waitBeforeFirstUse(loc, handle, reduce.getResult());
  Value value = bindResult(reduce.getResult(), bytes);
  if (inShard)
    inGradientShard.insert(value);
}

LogicalResult StepLowering::lowerUpdate(UpdateOp update, Value stepNumber,
                                        Value learningRate) {
  Location loc = update.getLoc();
  UnitOp unit = unitOf(update.getParam());
  if (!unit)
    return update.emitOpError("updates a parameter, not a unit's shard; run "
                              "fsdp-partition and fsdp-insert-collectives first");
  const UnitRegions &regions = layout.of(unit.getSymName());
  RankedTensorType type = unit.getShardType();
  auto shardView = [&](ArenaRegion region) {
    return view(loc, arena, region.offset, type.getShape(), type.getElementType());
  };
  UpdateOperands operands;
  operands.grad = shardView(regions.grads);
  // Gradients that were reduced elsewhere land in the gradient shard first.
  Value grad = update.getGrad();
  if (!inGradientShard.contains(grad))
    bufferization::MaterializeInDestinationOp::create(b, loc, TypeRange{}, grad,
                                                      operands.grad, /*restrict=*/true,
                                                      /*writable=*/true);
  operands.param = shardView(regions.params);
  for (const StateSlot &slot : regions.state)
    operands.state.push_back(shardView(slot.region));
  operands.step = stepNumber;
  operands.lr = learningRate;
  if (Value coefficient = update.getCoefficient())
    operands.coefficient = tensor::ExtractOp::create(b, loc, coefficient);
  buildOptimizerUpdate(b, loc, update.getOptimizer(), operands);
  return success();
}

LogicalResult StepLowering::lower(Value stepNumber, Value learningRate) {
  gathers = llvm::to_vector(body.getOps<AllGatherOp>());
  SmallVector<Operation *> lowered;
  for (Operation &op : llvm::make_early_inc_range(body.without_terminator())) {
    b.setInsertionPoint(&op);
    LogicalResult result = success();
    if (auto use = dyn_cast<UseOp>(op))
      result = lowerUse(use);
    else if (auto gather = dyn_cast<AllGatherOp>(op))
      lowerAllGather(gather);
    else if (auto paramView = dyn_cast<ParamViewOp>(op)) {
      auto param = SymbolTable::lookupNearestSymbolFrom<ParamOp>(&op, paramView.getParamAttr());
      int64_t elementBytes = tensorBytes(param.getTensorType()) /
                             param.getTensorType().getNumElements();
      paramView.replaceAllUsesWith(tensor(op.getLoc(), buffers.lookup(paramView.getGathered()),
                                          *param.getOffset() * elementBytes,
                                          param.getTensorType()));
    } else if (auto flatten = dyn_cast<FlattenOp>(op))
      lowerFlatten(flatten);
    else if (auto reduce = dyn_cast<ReduceScatterOp>(op))
      result = lowerReduceScatter(reduce);
    else if (auto reduce = dyn_cast<AllReduceOp>(op))
      lowerAllReduce(reduce);
    else if (auto update = dyn_cast<UpdateOp>(op))
      result = lowerUpdate(update, stepNumber, learningRate);
    else if (!isa<FreeOp>(op))
      continue;
    if (failed(result))
      return failure();
    lowered.push_back(&op);
  }
  // Gathered and flat buffers are read only by the ops lowered here.
  for (Operation *op : lowered)
    op->dropAllReferences();
  for (Operation *op : lowered) {
    op->dropAllUses();
    op->erase();
  }
  return success();
}

struct ConvertFSDPToRuntimePass
    : public fsdp::impl::ConvertFSDPToRuntimePassBase<ConvertFSDPToRuntimePass> {
  void runOnOperation() override;
  LogicalResult convert(ModuleOp module, PlanAttr plan, func::FuncOp step);
};

/// Every input's dimension 0 is the batch, the same for all.
LogicalResult verifyBatchDims(func::FuncOp step, ArrayRef<RankedTensorType> inputs) {
  for (auto [index, type] : llvm::enumerate(inputs)) {
    if (type.getRank() == 0 || type.getDimSize(0) != inputs.front().getDimSize(0))
      return step.emitError("every input's dimension 0 is the batch, but input #")
             << index << " is " << type << " and input #0 is " << inputs.front();
    if (!type.getElementType().isF32() && !type.getElementType().isInteger(32) &&
        !type.getElementType().isInteger(64))
      return step.emitError("input #") << index << " has element type "
                                       << type.getElementType()
                                       << "; the CPU target supports f32, i32 and i64";
  }
  return success();
}

LogicalResult ConvertFSDPToRuntimePass::convert(ModuleOp module, PlanAttr plan,
                                                func::FuncOp step) {
  MLIRContext *ctx = module.getContext();
  // The step's last two arguments are the step number and the learning rate.
  unsigned numInputs = step.getNumArguments() - 2;
  SmallVector<RankedTensorType> inputTypes;
  for (Type type : step.getArgumentTypes().take_front(numInputs))
    inputTypes.push_back(llvm::cast<RankedTensorType>(type));
  if (failed(verifyBatchDims(step, inputTypes)))
    return failure();
  for (ParamOp param : module.getOps<ParamOp>())
    if (!param.getTensorType().getElementType().isF32())
      return param.emitError("the CPU target supports f32 parameters only");

  FailureOr<SmallVector<InputRole>> roles = findInputRoles(step, numInputs);
  if (failed(roles))
    return failure();
  ArenaLayout layout = ArenaLayout::build(module, step, numInputs, plan.getOptimizer());

  // The new signature: (arena, step, lr) -> f32.
  Block &body = step.getBody().front();
  Location loc = step.getLoc();
  auto arenaType = MemRefType::get({layout.persistentBytes}, IntegerType::get(ctx, 8));
  Value arena = body.insertArgument(0u, arenaType, loc);
  // Gathers run ahead by the plan's prefetch depth, within its cap on gathers
  // in flight.
  int64_t prefetch = std::max<int64_t>(
      0, std::min<int64_t>(plan.getPrefetch(), plan.getMaxInflightGathers()));
  StepLowering lowering(module, layout, arena, body, prefetch);
  for (unsigned i = 0; i < numInputs; ++i)
    body.getArgument(1 + i).replaceAllUsesWith(
        lowering.tensor(loc, arena, layout.inputs[i].offset, inputTypes[i]));
  if (failed(lowering.lower(body.getArgument(1 + numInputs), body.getArgument(2 + numInputs))))
    return failure();

  OpBuilder b(ctx);
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  b.setInsertionPoint(ret);
  Value loss = tensor::ExtractOp::create(b, ret.getLoc(), ret.getOperand(0));
  if (!loss.getType().isF32())
    return step.emitError("the CPU target needs an f32 loss");
  ret->setOperands(loss);
  body.eraseArguments(1, numInputs);
  step.setFunctionType(FunctionType::get(
      ctx, body.getArgumentTypes(), TypeRange{Float32Type::get(ctx)}));
  step.setName(kStepFunction);

  // The manifest, NUL-terminated for the C runtime.
  std::string manifest = buildManifest(plan, layout, inputTypes, *roles);
  manifest.push_back('\0');
  b.setInsertionPointToStart(module.getBody());
  auto manifestType = LLVM::LLVMArrayType::get(IntegerType::get(ctx, 8), manifest.size());
  LLVM::GlobalOp::create(b, loc, manifestType, /*isConstant=*/true, LLVM::Linkage::External,
                         kManifestGlobal, b.getStringAttr(manifest));

  for (ParamOp param : llvm::make_early_inc_range(module.getOps<ParamOp>()))
    param.erase();
  for (UnitOp unit : llvm::make_early_inc_range(module.getOps<UnitOp>()))
    unit.erase();
  module->removeAttr(FSDPDialect::getPlanAttrName());
  return success();
}

void ConvertFSDPToRuntimePass::runOnOperation() {
  ModuleOp module = getOperation();
  auto plan = module->getAttrOfType<PlanAttr>(FSDPDialect::getPlanAttrName());
  auto step = module.lookupSymbol<func::FuncOp>("train_step");
  if (!plan || !step || module.getOps<UnitOp>().empty()) {
    module.emitError("convert-fsdp-to-runtime needs the plan, the units of fsdp-partition "
                     "and the @train_step of fsdp-autodiff");
    return signalPassFailure();
  }
  if (failed(convert(module, plan, step)))
    signalPassFailure();
}

} // namespace
