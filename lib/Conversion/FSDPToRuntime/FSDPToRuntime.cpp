//===- FSDPToRuntime.cpp - convert-fsdp-to-runtime ------------------------===//
//
// Turns `@train_step(inputs..., step, lr) -> loss` into
// `fsdp_train_step(arena, step, lr) -> f32` on one arena laid out by
// ArenaLayout (with offload = optimizer, a host arena after the arena), and
// records the layout in the module's `fsdp.manifest` (#fsdp.manifest). With the arena in device
// memory the step takes lr and step from the arena and leaves its loss there
// (the manifest's device_scalars): nothing of it depends on host values, so
// the runtime can replay it as a CUDA graph.
//
//===----------------------------------------------------------------------===//

#include "ArenaLayout.h"
#include "InputRoles.h"
#include "Manifest.h"
#include "StepLowering.h"

#include "Utils/RuntimeABI.h"
#include "Utils/StepFunction.h"
#include "fsdp/Conversion/Passes.h"
#include "fsdp/IR/FSDPOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <limits>

namespace mlir::fsdp {
#define GEN_PASS_DEF_CONVERTFSDPTORUNTIMEPASS
#include "fsdp/Conversion/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;
using namespace mlir::fsdp;

namespace {

struct ConvertFSDPToRuntimePass
    : public fsdp::impl::ConvertFSDPToRuntimePassBase<ConvertFSDPToRuntimePass> {
  using Base::Base;
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

/// The step's inputs, as fsdp-accumulate-micro-batches left them.
struct StepInputs {
  int64_t microBatches;
  /// The inputs of all micro-batches, and of one.
  unsigned numArgs, numInputs;
  /// One micro-batch's input types, and the rank's rows of each input.
  SmallVector<RankedTensorType> inputTypes, rankTypes;
};

/// The step's inputs, checked against the plan.
FailureOr<StepInputs> readStepInputs(func::FuncOp step, PlanAttr plan) {
  // The step's last two arguments are the step number and the learning rate;
  // before them, each micro-batch's inputs (fsdp-accumulate-micro-batches).
  int64_t microBatches = 1;
  if (auto count = step->getAttrOfType<IntegerAttr>(FSDPDialect::getMicroBatchesAttrName()))
    microBatches = count.getInt();
  if (microBatches != plan.getMicroBatches())
    return step.emitError("the plan asks for ")
           << plan.getMicroBatches() << " micro-batches, but the step runs " << microBatches
           << "; run fsdp-accumulate-micro-batches first";
  unsigned numArgs = step.getNumArguments() - 2;
  if (numArgs % microBatches != 0)
    return step.emitError("a step of ") << microBatches << " micro-batches has "
                                        << numArgs << " inputs";
  unsigned numInputs = numArgs / microBatches;
  SmallVector<RankedTensorType> inputTypes;
  for (Type type : step.getArgumentTypes().take_front(numInputs))
    inputTypes.push_back(llvm::cast<RankedTensorType>(type));
  if (failed(verifyBatchDims(step, inputTypes)))
    return failure();
  // The rank's rows of each input: its micro-batches one after the other.
  SmallVector<RankedTensorType> rankTypes;
  for (RankedTensorType microBatch : inputTypes) {
    SmallVector<int64_t> shape(microBatch.getShape());
    shape[0] *= microBatches;
    rankTypes.push_back(microBatch.clone(shape));
  }
  return StepInputs{microBatches, numArgs, numInputs, std::move(inputTypes), std::move(rankTypes)};
}

/// The arenas the step now takes first, and the index of its first input
/// after them.
struct StepArenas {
  Value arena, hostArena;
  unsigned firstInput;
};

/// The new signature: (arena, [host arena,] step, lr) -> f32.
StepArenas insertArenaArguments(Block &body, Location loc, const ArenaLayout &layout) {
  MLIRContext *ctx = loc.getContext();
  auto arenaType = MemRefType::get({layout.persistentBytes}, IntegerType::get(ctx, 8));
  Value arena = body.insertArgument(0u, arenaType, loc);
  Value hostArena;
  if (layout.hostBytes > 0)
    hostArena = body.insertArgument(
        1u, MemRefType::get({layout.hostBytes}, IntegerType::get(ctx, 8)), loc);
  unsigned firstInput = hostArena ? 2 : 1;
  return {arena, hostArena, firstInput};
}

/// Replaces each micro-batch's input arguments by tensors of their rows in
/// the arena.
void bindStepInputs(StepLowering &lowering, Block &body, Location loc, const StepArenas &arenas,
                    const StepInputs &inputs, const ArenaLayout &layout) {
  for (int64_t m = 0; m < inputs.microBatches; ++m)
    for (unsigned i = 0; i < inputs.numInputs; ++i)
      body.getArgument(arenas.firstInput + m * inputs.numInputs + i)
          .replaceAllUsesWith(lowering.tensor(
              loc, arenas.arena, layout.inputs[i].offset + m * tensorBytes(inputs.inputTypes[i]),
              inputs.inputTypes[i]));
}

/// Makes the step return its loss as an f32 scalar (a device step leaves the
/// loss in the arena instead).
LogicalResult returnStepLoss(func::FuncOp step, const ArenaLayout &layout, StepLowering &lowering) {
  Block &body = step.getBody().front();
  OpBuilder b(step.getContext());
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  b.setInsertionPoint(ret);
  Value lossTensor = ret.getOperand(0);
  if (!cast<RankedTensorType>(lossTensor.getType()).getElementType().isF32())
    return step.emitError("the CPU target needs an f32 loss");
  Value loss;
  if (std::optional<ArenaRegion> scalars = layout.deviceScalars) {
    // A device step leaves its loss in the arena for the runtime to copy
    // when it likes; what it returns is not the loss (NaN, so that a runtime
    // taking it for one stops).
    lowering.storeAtEnd(ret.getLoc(), lossTensor, scalars->offset + ArenaLayout::kLossOffset);
    loss = arith::ConstantOp::create(b, ret.getLoc(),
                                     b.getF32FloatAttr(std::numeric_limits<float>::quiet_NaN()));
  } else {
    loss = tensor::ExtractOp::create(b, ret.getLoc(), lossTensor);
  }
  ret->setOperands(loss);
  return success();
}

/// Drops the input arguments, now read from the arena, and names the step
/// for the runtime.
void finishStepSignature(func::FuncOp step, unsigned firstInput, unsigned numArgs) {
  MLIRContext *ctx = step.getContext();
  Block &body = step.getBody().front();
  body.eraseArguments(firstInput, numArgs);
  step->removeAttr(FSDPDialect::getMicroBatchesAttrName());
  step.setFunctionType(FunctionType::get(
      ctx, body.getArgumentTypes(), TypeRange{Float32Type::get(ctx)}));
  step.setName(kStepFunction);
}

/// The units, their parameters and the plan, which the arena and the
/// manifest now hold.
void eraseUnitsAndPlan(ModuleOp module) {
  for (ParamOp param : llvm::make_early_inc_range(module.getOps<ParamOp>()))
    param.erase();
  for (UnitOp unit : llvm::make_early_inc_range(module.getOps<UnitOp>()))
    unit.erase();
  module->removeAttr(FSDPDialect::getPlanAttrName());
  module->removeAttr(FSDPDialect::getRecomputeAttrName());
}

LogicalResult ConvertFSDPToRuntimePass::convert(ModuleOp module, PlanAttr plan, func::FuncOp step) {
  FailureOr<StepInputs> inputs = readStepInputs(step, plan);
  if (failed(inputs))
    return failure();
  for (ParamOp param : module.getOps<ParamOp>())
    if (!param.getTensorType().getElementType().isF32())
      return param.emitError("the CPU target supports f32 parameters only");

  if (plan.getOffload() == Offload::Optimizer && !deviceArena)
    return emitError(module.getLoc(),
                     "offload = optimizer moves the optimizer to host memory, where the CPU "
                     "target keeps everything already; it applies to --target=cuda");
  FailureOr<SmallVector<InputRole>> roles = findInputRoles(step, inputs->numInputs);
  if (failed(roles))
    return failure();
  ArenaLayout layout = ArenaLayout::build(module, inputs->rankTypes, plan, deviceArena);

  Block &body = step.getBody().front();
  Location loc = step.getLoc();
  StepArenas arenas = insertArenaArguments(body, loc, layout);
  // Gathers run ahead by the plan's prefetch depth, within its cap on gathers
  // in flight.
  int64_t prefetch =
      std::max<int64_t>(0, std::min<int64_t>(plan.getPrefetch(), plan.getMaxInflightGathers()));
  StepLowering lowering(module, layout, arenas.arena, arenas.hostArena, body, prefetch);
  bindStepInputs(lowering, body, loc, arenas, *inputs, layout);
  unsigned firstInput = arenas.firstInput, numArgs = inputs->numArgs;
  if (failed(lowering.lower(body.getArgument(firstInput + numArgs),
                            body.getArgument(firstInput + numArgs + 1))))
    return failure();
  if (failed(returnStepLoss(step, layout, lowering)))
    return failure();
  finishStepSignature(step, firstInput, numArgs);

  module->setAttr(
      FSDPDialect::getManifestAttrName(),
      buildManifest(plan, layout, inputs->rankTypes, *roles,
                    module->getAttrOfType<RecomputeAttr>(FSDPDialect::getRecomputeAttrName()),
                    lowering.hostGradTypes(), step));
  eraseUnitsAndPlan(module);
  return success();
}

void ConvertFSDPToRuntimePass::runOnOperation() {
  ModuleOp module = getOperation();
  auto step = requireStep(module, StepLevel::Model, getArgument());
  if (!step)
    return signalPassFailure();
  auto plan = module->getAttrOfType<PlanAttr>(FSDPDialect::getPlanAttrName());
  if (!plan || module.getOps<UnitOp>().empty()) {
    module.emitError("convert-fsdp-to-runtime needs the plan and the units of fsdp-partition");
    return signalPassFailure();
  }
  if (failed(convert(module, plan, step)))
    signalPassFailure();
}

} // namespace
