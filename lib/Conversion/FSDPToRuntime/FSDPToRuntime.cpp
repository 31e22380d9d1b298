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

#include "fsdp/Conversion/Passes.h"
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

constexpr StringLiteral kStepFunction = "fsdp_train_step";
constexpr StringLiteral kManifestGlobal = "fsdp_manifest";

/// Creates views of the arena's regions at one insertion point.
class ArenaViews {
public:
  ArenaViews(OpBuilder &b, Location loc, Value arena) : b(b), loc(loc), arena(arena) {}

  Value memref(ArenaRegion region, RankedTensorType type) {
    Value offset = arith::ConstantIndexOp::create(b, loc, region.offset);
    auto memrefType = MemRefType::get(type.getShape(), type.getElementType());
    return memref::ViewOp::create(b, loc, memrefType, arena, offset, ValueRange{});
  }

  /// The region's contents as a tensor nobody else writes during the step.
  Value tensor(ArenaRegion region, RankedTensorType type) {
    return bufferization::ToTensorOp::create(b, loc, type, memref(region, type),
                                             b.getUnitAttr(), UnitAttr());
  }

private:
  OpBuilder &b;
  Location loc;
  Value arena;
};

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
  auto arenaType = MemRefType::get({layout.totalBytes}, IntegerType::get(ctx, 8));
  Value arena = body.insertArgument(0u, arenaType, loc);
  OpBuilder b = OpBuilder::atBlockBegin(&body);
  ArenaViews views(b, loc, arena);

  for (unsigned i = 0; i < numInputs; ++i)
    body.getArgument(1 + i).replaceAllUsesWith(
        views.tensor(layout.inputs[i], inputTypes[i]));

  // One tensor per parameter: the values the whole step reads.
  SymbolTable symbols(module);
  llvm::DenseMap<ParamOp, Value> paramTensors;
  for (auto [param, region] : layout.params)
    paramTensors[param] = views.tensor(region, param.getTensorType());
  for (UseOp use : llvm::make_early_inc_range(body.getOps<UseOp>())) {
    use.replaceAllUsesWith(paramTensors[symbols.lookup<ParamOp>(use.getParam())]);
    use.erase();
  }

  Value stepNumber = body.getArgument(1 + numInputs);
  Value learningRate = body.getArgument(2 + numInputs);
  for (UpdateOp update : llvm::make_early_inc_range(body.getOps<UpdateOp>())) {
    b.setInsertionPoint(update);
    ParamOp param = symbols.lookup<ParamOp>(update.getParam());
    RankedTensorType type = param.getTensorType();
    ArenaViews here(b, update.getLoc(), arena);
    UpdateOperands operands;
    operands.grad = here.memref(layout.grads.lookup(param), type);
    bufferization::MaterializeInDestinationOp::create(b, update.getLoc(), TypeRange{},
                                                      update.getGrad(), operands.grad,
                                                      /*restrict=*/true, /*writable=*/true);
    operands.param = here.memref(layout.params.lookup(param), type);
    for (const StateSlot *slot : layout.stateOf(param))
      operands.state.push_back(here.memref(slot->region, type));
    operands.step = stepNumber;
    operands.lr = learningRate;
    if (Value coefficient = update.getCoefficient())
      operands.coefficient = tensor::ExtractOp::create(b, update.getLoc(), coefficient);
    buildOptimizerUpdate(b, update.getLoc(), update.getOptimizer(), operands);
    update.erase();
  }

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
  module->removeAttr(FSDPDialect::getPlanAttrName());
  return success();
}

void ConvertFSDPToRuntimePass::runOnOperation() {
  ModuleOp module = getOperation();
  auto plan = module->getAttrOfType<PlanAttr>(FSDPDialect::getPlanAttrName());
  auto step = module.lookupSymbol<func::FuncOp>("train_step");
  if (!plan || !step) {
    module.emitError("convert-fsdp-to-runtime needs the plan and the @train_step that "
                     "fsdp-autodiff derives");
    return signalPassFailure();
  }
  if (failed(convert(module, plan, step)))
    signalPassFailure();
}

} // namespace
