//===- Autodiff.cpp - fsdp-autodiff: derive the training step -------------===//
//
// Reverse-mode differentiation of the model's loss function. The forward ops
// are kept as written; the backward ops come from each op's gradient rule
// (DifferentiableOpInterface); the update comes from the plan's optimizer.
//
//===----------------------------------------------------------------------===//

#include "Utils/StepFunction.h"
#include "fsdp/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPAUTODIFFPASS
#include "fsdp/Transforms/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;
using namespace mlir::fsdp;

namespace {

/// The one function of the module: the model's loss.
FailureOr<func::FuncOp> findLossFunction(ModuleOp module) {
  auto functions = llvm::to_vector(module.getOps<func::FuncOp>());
  if (functions.size() != 1) {
    module.emitError("fsdp-autodiff expects exactly one function, the model's loss, "
                     "found ")
        << functions.size();
    return failure();
  }
  func::FuncOp loss = functions.front();
  auto result = loss.getFunctionType().getNumResults() == 1
                    ? llvm::dyn_cast<RankedTensorType>(loss.getResultTypes()[0])
                    : RankedTensorType();
  if (!result || result.getRank() != 0 || !llvm::isa<FloatType>(result.getElementType())) {
    loss.emitError("the loss function must return one rank-0 float tensor");
    return failure();
  }
  if (!loss.getBody().hasOneBlock()) {
    loss.emitError("the loss function must be a single block");
    return failure();
  }
  return loss;
}

/// Values that depend on a trainable parameter: only they need gradients.
llvm::DenseSet<Value> findActiveValues(Block &body, SymbolTable &symbols) {
  llvm::DenseSet<Value> active;
  for (Operation &op : body) {
    bool isActive = false;
    if (auto use = dyn_cast<UseOp>(op))
      isActive = !symbols.lookup<ParamOp>(use.getParam()).getFrozen();
    else
      isActive = llvm::any_of(op.getOperands(), [&](Value v) { return active.contains(v); });
    if (isActive)
      active.insert(op.getResults().begin(), op.getResults().end());
  }
  return active;
}

/// Adds `grad` to the gradient accumulated so far for a value or parameter.
void accumulate(OpBuilder &b, Location loc, Value &slot, Value grad) {
  slot = slot ? AddOp::create(b, loc, slot, grad).getResult() : grad;
}

struct FSDPAutodiffPass
    : public fsdp::impl::FSDPAutodiffPassBase<FSDPAutodiffPass> {
  using Base::Base;
  void runOnOperation() override;

  /// Builds the backward pass; returns each trainable parameter's gradient.
  FailureOr<llvm::MapVector<StringAttr, Value>>
  buildBackward(OpBuilder &b, Block &body, Value loss, SymbolTable &symbols);
};

} // namespace

FailureOr<llvm::MapVector<StringAttr, Value>>
FSDPAutodiffPass::buildBackward(OpBuilder &b, Block &body, Value loss,
                                SymbolTable &symbols) {
  llvm::DenseSet<Value> active = findActiveValues(body, symbols);
  SmallVector<Operation *> forward;
  for (Operation &op : body.without_terminator())
    forward.push_back(&op);

  llvm::DenseMap<Value, Value> grads;
  llvm::MapVector<StringAttr, Value> paramGrads;
  Location lossLoc = loss.getLoc();
  grads[loss] = arith::ConstantOp::create(
      b, lossLoc, DenseElementsAttr::get(llvm::cast<ShapedType>(loss.getType()),
                                         FloatAttr::get(getElementTypeOrSelf(loss), 1.0)));

  for (Operation *op : llvm::reverse(forward)) {
    if (!llvm::any_of(op->getResults(), [&](Value v) { return grads.count(v); }))
      continue;
    if (auto use = dyn_cast<UseOp>(op)) {
      if (active.contains(use.getResult()))
        accumulate(b, use.getLoc(), paramGrads[use.getParamAttr().getAttr()],
                   grads[use.getResult()]);
      continue;
    }
    if (!llvm::any_of(op->getResults(), [&](Value v) { return active.contains(v); }))
      continue;
    auto differentiable = dyn_cast<DifferentiableOpInterface>(op);
    if (!differentiable)
      return op->emitOpError("has no gradient rule, but the loss depends on it "
                             "through a trainable parameter");
    SmallVector<Value> resultGrads;
    for (Value result : op->getResults())
      resultGrads.push_back(grads.lookup(result));
    SmallVector<Value> operandGrads;
    b.setInsertionPoint(body.getTerminator());
    differentiable.buildGradients(b, resultGrads, operandGrads);
    for (auto [operand, grad] : llvm::zip_equal(op->getOperands(), operandGrads))
      if (grad && active.contains(operand))
        accumulate(b, op->getLoc(), grads[operand], grad);
  }
  return paramGrads;
}

void FSDPAutodiffPass::runOnOperation() {
  ModuleOp module = getOperation();
  auto plan = module->getAttrOfType<PlanAttr>(FSDPDialect::getPlanAttrName());
  if (!plan) {
    module.emitError("fsdp-autodiff needs the module's 'fsdp.plan' (it names the "
                     "optimizer)");
    return signalPassFailure();
  }
  FailureOr<func::FuncOp> maybeLoss = findLossFunction(module);
  if (failed(maybeLoss))
    return signalPassFailure();
  func::FuncOp step = *maybeLoss;
  step.setName(kModelStepFunction);
  SymbolTable symbols(module);

  // The step also takes its number and the learning rate.
  MLIRContext *ctx = &getContext();
  Location loc = step.getLoc();
  unsigned numInputs = step.getNumArguments();
  if (failed(step.insertArguments({numInputs, numInputs},
                                  {IntegerType::get(ctx, 64), Float32Type::get(ctx)},
                                  {DictionaryAttr(), DictionaryAttr()}, {loc, loc})))
    return signalPassFailure();
  Block &body = step.getBody().front();
  Value stepNumber = body.getArgument(numInputs);
  Value learningRate = body.getArgument(numInputs + 1);
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  Value loss = ret.getOperand(0);
  if (forwardOnly) {
    step->setAttr(FSDPDialect::getForwardOnlyAttrName(), UnitAttr::get(ctx));
    return;
  }

  OpBuilder b(ret);
  FailureOr<llvm::MapVector<StringAttr, Value>> paramGrads =
      buildBackward(b, body, loss, symbols);
  if (failed(paramGrads))
    return signalPassFailure();

  // Updates follow declaration order, so the IR reads like the model.
  b.setInsertionPoint(ret);
  SmallVector<std::pair<ParamOp, Value>> updates;
  for (ParamOp param : module.getOps<ParamOp>()) {
    if (param.getFrozen())
      continue;
    Value grad = paramGrads->lookup(param.getSymNameAttr());
    if (!grad) {
      param.emitWarning("parameter does not affect the loss; it is not updated");
      continue;
    }
    updates.emplace_back(param, grad);
  }

  Value coefficient;
  double maxNorm = plan.getClipGradNorm().convertToDouble();
  if (maxNorm > 0.0 && !updates.empty()) {
    Value sumOfSquares;
    for (auto [param, grad] : updates) {
      auto dims = llvm::to_vector(llvm::seq<int64_t>(0, param.getTensorType().getRank()));
      Value squares = MulOp::create(b, loc, grad, grad);
      Value sum = ReduceSumOp::create(b, loc, squares, dims);
      accumulate(b, loc, sumOfSquares, sum);
    }
    coefficient = ClipCoefficientOp::create(b, loc, sumOfSquares,
                                            b.getF64FloatAttr(maxNorm));
  }
  for (auto [param, grad] : updates)
    UpdateOp::create(b, param.getLoc(), param.getSymName(), grad, stepNumber,
                     learningRate, coefficient, plan.getOptimizer());

  // Gradient rules also build the gradients of inputs nobody needs.
  IRRewriter rewriter(ctx);
  (void)runRegionDCE(rewriter, step.getBody());
}
