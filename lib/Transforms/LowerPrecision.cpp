//===- LowerPrecision.cpp - fsdp-lower-precision --------------------------===//
//
// Applies the plan's param_dtype and reduce_dtype to the sharded step
// (docs/MixedPrecision.md): units are gathered in param_dtype, every value of
// forward and backward is computed in it (losses stay f32), flat gradients
// are reduced in reduce_dtype and the shards the optimizer reads keep the
// unit's type. The dtype of every value is then explicit in the IR, so the
// lowering, the memory plan and the report follow it without a policy of
// their own.
//
//===----------------------------------------------------------------------===//

#include "Utils/StepFunction.h"
#include "fsdp/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPLOWERPRECISIONPASS
#include "fsdp/Transforms/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;
using namespace mlir::fsdp;

namespace {

Type floatType(MLIRContext *ctx, DType dtype) {
  return dtype == DType::BF16 ? Type(BFloat16Type::get(ctx)) : Type(Float32Type::get(ctx));
}

/// A float tensor's element type, or null for anything else.
Type floatElement(Value value) {
  auto type = llvm::dyn_cast<RankedTensorType>(value.getType());
  return type && llvm::isa<FloatType>(type.getElementType()) ? type.getElementType() : Type();
}

RankedTensorType withElement(Type type, Type element) {
  return llvm::cast<RankedTensorType>(type).clone(element);
}

bool isCollective(Operation *op) { return isa<ReduceScatterOp, AllReduceOp>(op); }

/// Whether `op`'s operand #index is an f32 value by definition: the loss
/// gradient that cross_entropy_grad computes from, and the log-sum-exp of an
/// attention and its gradient.
bool isF32ByDefinition(Operation *op, unsigned index) {
  if (auto grad = dyn_cast<CrossEntropyGradOp>(op))
    return grad.getGradMutable().getOperandNumber() == index;
  if (auto grad = dyn_cast<TensorCrossEntropyGradOp>(op))
    return grad.getGradMutable().getOperandNumber() == index;
  if (auto grad = dyn_cast<AttentionGradOp>(op))
    return grad.getLseMutable().getOperandNumber() == index ||
           grad.getLseGradMutable().getOperandNumber() == index;
  return false;
}

class PrecisionLowering {
public:
  PrecisionLowering(func::FuncOp step, PlanAttr plan)
      : step(step), builder(step.getContext()),
        compute(floatType(step.getContext(), plan.getParamDtype())),
        reduce(floatType(step.getContext(), plan.getReduceDtype())) {}

  LogicalResult run();

private:
  /// `value` in element type `element`: itself, a constant rebuilt in it, or
  /// an fsdp.convert inserted at the builder's point.
  Value converted(Value value, Type element);
  /// Replaces every use of `value` but `except` by `replacement`.
  static void replaceUsesBut(Value value, Value replacement, Operation *except) {
    value.replaceUsesWithIf(replacement,
                            [&](OpOperand &use) { return use.getOwner() != except; });
  }
  void lowerInputs();
  void lowerCompute(Operation *op);
  void lowerFlatten(FlattenOp flatten);
  /// After a flat gradient's last collective, the value returns to the type
  /// of its unit's shard.
  void restoreShardType(Value reduced, Type shard);

  func::FuncOp step;
  OpBuilder builder;
  Type compute, reduce;
  SymbolTableCollection symbols;
  /// Flat gradients on their way through collectives: their shard's type.
  llvm::DenseMap<Value, Type> shardTypes;
};

Value PrecisionLowering::converted(Value value, Type element) {
  if (floatElement(value) == element)
    return value;
  auto type = withElement(value.getType(), element);
  DenseElementsAttr dense;
  if (matchPattern(value, m_Constant(&dense)) && dense.isSplat()) {
    APFloat splat = dense.getSplatValue<APFloat>();
    bool losesInfo = false;
    splat.convert(llvm::cast<FloatType>(element).getFloatSemantics(),
                  APFloat::rmNearestTiesToEven, &losesInfo);
    return arith::ConstantOp::create(builder, value.getLoc(),
                                     DenseElementsAttr::get(type, splat));
  }
  return ConvertOp::create(builder, value.getLoc(), type, value);
}

void PrecisionLowering::lowerInputs() {
  // Inputs are rounded once, when the step reads them.
  Block &body = step.getBody().front();
  builder.setInsertionPointToStart(&body);
  for (BlockArgument input : body.getArguments()) {
    Type element = floatElement(input);
    if (!element || element == compute || input.use_empty())
      continue;
    Value rounded = converted(input, compute);
    replaceUsesBut(input, rounded, rounded.getDefiningOp());
  }
}

void PrecisionLowering::lowerCompute(Operation *op) {
  // An op computes in param_dtype when one of its float operands is in it
  // (what reads a gathered unit, an input or an earlier such result); the
  // rest of the step (loss sums, clipping, the update) is the shard's.
  bool inCompute = llvm::any_of(op->getOperands(),
                                [&](Value v) { return floatElement(v) == compute; });
  if (!inCompute)
    return;
  builder.setInsertionPoint(op);
  for (OpOperand &operand : op->getOpOperands()) {
    Type element = floatElement(operand.get());
    if (element && element != compute && !isF32ByDefinition(op, operand.getOperandNumber()))
      operand.set(converted(operand.get(), compute));
  }
  // Losses are f32 (their types are inferred so), and so is an attention's
  // log-sum-exp; every other result is rounded to param_dtype.
  if (isa<CrossEntropyOp, TensorCrossEntropyOp, MSEOp>(op))
    return;
  for (OpResult result : op->getResults())
    if (floatElement(result) && !(isa<AttentionOp>(op) && result.getResultNumber() == 1))
      result.setType(withElement(result.getType(), compute));
}

void PrecisionLowering::lowerFlatten(FlattenOp flatten) {
  UnitOp unit = symbols.lookupNearestSymbolFrom<UnitOp>(flatten, flatten.getUnitAttr());
  Type shard = unit.getElementType();
  // Reduced in reduce_dtype; without a collective the flat gradient is the
  // gradient shard itself.
  bool reduced = llvm::any_of(flatten->getUsers(), isCollective);
  Type flat = reduced ? reduce : shard;
  builder.setInsertionPoint(flatten);
  for (OpOperand &grad : flatten.getGradsMutable()) {
    Type element = floatElement(grad.get());
    // bf16 widens into f32 exactly; anything else is rounded first.
    if (element != flat && !(element.isBF16() && flat.isF32()))
      grad.set(converted(grad.get(), flat));
  }
  flatten.getResult().setType(withElement(flatten.getType(), flat));
  if (reduced)
    shardTypes[flatten.getResult()] = shard;
  else
    restoreShardType(flatten.getResult(), shard);
}

void PrecisionLowering::restoreShardType(Value reduced, Type shard) {
  if (floatElement(reduced) == shard)
    return;
  builder.setInsertionPointAfterValue(reduced);
  Value widened = converted(reduced, shard);
  reduced.replaceUsesWithIf(widened, [&](OpOperand &use) {
    return use.getOwner() != widened.getDefiningOp() && !isCollective(use.getOwner());
  });
}

LogicalResult PrecisionLowering::run() {
  Block &body = step.getBody().front();
  bool lowersCompute = compute.isBF16();
  if (lowersCompute)
    lowerInputs();
  for (Operation &op : llvm::make_early_inc_range(body)) {
    if (auto gather = dyn_cast<AllGatherOp>(op)) {
      if (lowersCompute)
        gather.getResult().setType(withElement(gather.getType(), compute));
    } else if (auto view = dyn_cast<ParamViewOp>(op)) {
      view.getResult().setType(
          withElement(view.getType(), floatElement(view.getGathered())));
    } else if (auto use = dyn_cast<UseOp>(op)) {
      // A parameter of an unsharded unit: its bf16 copy is the "gather".
      if (lowersCompute && floatElement(use.getResult()) != compute) {
        builder.setInsertionPointAfter(use);
        Value rounded = converted(use.getResult(), compute);
        replaceUsesBut(use.getResult(), rounded, rounded.getDefiningOp());
      }
    } else if (auto flatten = dyn_cast<FlattenOp>(op)) {
      lowerFlatten(flatten);
    } else if (isCollective(&op)) {
      Value result = op.getResult(0);
      result.setType(withElement(result.getType(), floatElement(op.getOperand(0))));
      // The last collective of a flat gradient hands it to the shard.
      if (Type shard = shardTypes.lookup(op.getOperand(0))) {
        if (llvm::any_of(result.getUsers(), isCollective))
          shardTypes[result] = shard;
        else
          restoreShardType(result, shard);
      }
    } else if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      builder.setInsertionPoint(ret);
      for (auto [operand, type] :
           llvm::zip_equal(ret->getOpOperands(), step.getResultTypes()))
        if (floatElement(operand.get()))
          operand.set(converted(operand.get(), llvm::cast<RankedTensorType>(type)
                                                    .getElementType()));
    } else if (lowersCompute && !isa<FreeOp, UpdateOp, ConvertOp>(op)) {
      lowerCompute(&op);
    }
  }
  return success();
}

struct FSDPLowerPrecisionPass
    : public fsdp::impl::FSDPLowerPrecisionPassBase<FSDPLowerPrecisionPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto step = requireStep(module, StepLevel::Model, getArgument());
    if (!step)
      return signalPassFailure();
    auto plan = module->getAttrOfType<PlanAttr>(FSDPDialect::getPlanAttrName());
    if (!plan) {
      module.emitError("fsdp-lower-precision needs the module's 'fsdp.plan'");
      return signalPassFailure();
    }
    if (plan.getParamDtype() == DType::F32 && plan.getReduceDtype() == DType::F32)
      return;
    if (failed(PrecisionLowering(step, plan).run()))
      signalPassFailure();
  }
};

} // namespace
