//===- OptimizerUpdate.cpp - in-place optimizer steps on buffers ----------===//
//
// SGD and AdamW exactly as torch.optim defines them; the references in
// test/reference/optim.py implement the same formulas in float64.
//
//===----------------------------------------------------------------------===//

#include "OptimizerUpdate.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::fsdp;

namespace {

Value f32Constant(OpBuilder &b, Location loc, double value) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(value));
}

/// 1 - beta^step, computed in double as PyTorch does, then rounded to f32.
Value biasCorrection(OpBuilder &b, Location loc, double beta, Value step) {
  Value t = arith::SIToFPOp::create(b, loc, b.getF64Type(), step);
  Value power = math::PowFOp::create(
      b, loc, arith::ConstantOp::create(b, loc, b.getF64FloatAttr(beta)), t);
  Value one = arith::ConstantOp::create(b, loc, b.getF64FloatAttr(1.0));
  Value correction = arith::SubFOp::create(b, loc, one, power);
  return arith::TruncFOp::create(b, loc, b.getF32Type(), correction);
}

/// AdamW's factors of a step: lr / bc1, sqrt(bc2) and 1 - lr * wd.
SmallVector<Value> adamWFactors(OpBuilder &b, Location loc, AdamWAttr adamw, Value step,
                                Value lr) {
  double weightDecay = adamw.getWeightDecay().convertToDouble();
  Value stepSize = arith::DivFOp::create(
      b, loc, lr, biasCorrection(b, loc, adamw.getBeta1().convertToDouble(), step));
  Value sqrtCorrection2 = math::SqrtOp::create(
      b, loc, biasCorrection(b, loc, adamw.getBeta2().convertToDouble(), step));
  Value decay = arith::SubFOp::create(
      b, loc, f32Constant(b, loc, 1.0),
      arith::MulFOp::create(b, loc, lr, f32Constant(b, loc, weightDecay)));
  return {stepSize, sqrtCorrection2, decay};
}

/// A generic over the parameter's elements reading the gradient (and the
/// step's factors, when given as memrefs) and writing the parameter and
/// state in place (and the rounded parameter, if asked). `body` gets the
/// factors' values in the loop when they are memrefs, else none.
linalg::GenericOp buildInPlaceGeneric(
    OpBuilder &b, Location loc, const UpdateOperands &operands,
    function_ref<SmallVector<Value>(OpBuilder &, Location, Value grad, ValueRange factors,
                                    ValueRange current)>
        body) {
  auto type = llvm::cast<MemRefType>(operands.param.getType());
  SmallVector<Value> inputs = {operands.grad};
  inputs.append(operands.stepFactors.begin(), operands.stepFactors.end());
  SmallVector<Value> outputs = {operands.param};
  outputs.append(operands.state.begin(), operands.state.end());
  if (operands.rounded)
    outputs.push_back(operands.rounded);
  AffineMap elementwise = b.getMultiDimIdentityMap(type.getRank());
  SmallVector<AffineMap> maps = {elementwise};
  maps.append(operands.stepFactors.size(), AffineMap::get(type.getRank(), 0, b.getContext()));
  maps.append(outputs.size(), elementwise);
  SmallVector<utils::IteratorType> iterators(type.getRank(), utils::IteratorType::parallel);
  size_t factorCount = operands.stepFactors.size();
  return linalg::GenericOp::create(
      b, loc, TypeRange{}, inputs, outputs, maps, iterators,
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value grad = args[0];
        ValueRange factors = args.slice(1, factorCount);
        if (!grad.getType().isF32())
          grad = arith::ExtFOp::create(nb, nl, nb.getF32Type(), grad);
        if (operands.coefficient)
          grad = arith::MulFOp::create(nb, nl, grad, operands.coefficient);
        ValueRange current = args.drop_front(1 + factorCount).take_front(1 + operands.state.size());
        SmallVector<Value> results = body(nb, nl, grad, factors, current);
        if (operands.rounded)
          results.push_back(arith::TruncFOp::create(
              nb, nl, llvm::cast<MemRefType>(operands.rounded.getType()).getElementType(),
              results.front()));
        linalg::YieldOp::create(nb, nl, results);
      });
}

// v = momentum * v + (g + wd * p);  p -= lr * v   (no v without momentum)
linalg::GenericOp buildSGD(OpBuilder &b, Location loc, SGDAttr sgd,
                           const UpdateOperands &operands) {
  double momentum = sgd.getMomentum().convertToDouble();
  double weightDecay = sgd.getWeightDecay().convertToDouble();
  Value lr = operands.lr;
  return buildInPlaceGeneric(b, loc, operands, [&](OpBuilder &nb, Location nl, Value g,
                                                   ValueRange, ValueRange current)
                                 -> SmallVector<Value> {
    Value p = current[0];
    Value d = g;
    if (weightDecay != 0.0)
      d = arith::AddFOp::create(
          nb, nl, d, arith::MulFOp::create(nb, nl, f32Constant(nb, nl, weightDecay), p));
    SmallVector<Value> results;
    Value direction = d;
    if (momentum != 0.0) {
      Value v = current[1];
      direction = arith::AddFOp::create(
          nb, nl, arith::MulFOp::create(nb, nl, f32Constant(nb, nl, momentum), v), d);
    }
    results.push_back(
        arith::SubFOp::create(nb, nl, p, arith::MulFOp::create(nb, nl, lr, direction)));
    if (momentum != 0.0)
      results.push_back(direction);
    return results;
  });
}

// p -= lr * wd * p;  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;
// p -= (lr / bc1) * m / (sqrt(v) / sqrt(bc2) + eps)
linalg::GenericOp buildAdamW(OpBuilder &b, Location loc, AdamWAttr adamw,
                             const UpdateOperands &operands) {
  double beta1 = adamw.getBeta1().convertToDouble();
  double beta2 = adamw.getBeta2().convertToDouble();
  double eps = adamw.getEps().convertToDouble();
  // Computed here, before the loop, unless the step's factors are memrefs.
  SmallVector<Value> computed;
  if (operands.stepFactors.empty())
    computed = adamWFactors(b, loc, adamw, operands.step, operands.lr);
  return buildInPlaceGeneric(b, loc, operands, [&](OpBuilder &nb, Location nl, Value g,
                                                   ValueRange read, ValueRange current)
                                 -> SmallVector<Value> {
    ValueRange factors = read.empty() ? ValueRange(computed) : read;
    Value stepSize = factors[0], sqrtCorrection2 = factors[1], decay = factors[2];
    auto c = [&](double value) { return f32Constant(nb, nl, value); };
    auto mul = [&](Value x, Value y) { return arith::MulFOp::create(nb, nl, x, y); };
    auto add = [&](Value x, Value y) { return arith::AddFOp::create(nb, nl, x, y); };
    Value p = mul(current[0], decay);
    Value m = add(mul(c(beta1), current[1]), mul(c(1.0 - beta1), g));
    Value v = add(mul(c(beta2), current[2]), mul(c(1.0 - beta2), mul(g, g)));
    Value denominator =
        add(arith::DivFOp::create(nb, nl, math::SqrtOp::create(nb, nl, v), sqrtCorrection2),
            c(eps));
    Value step = mul(stepSize, arith::DivFOp::create(nb, nl, m, denominator));
    return {arith::SubFOp::create(nb, nl, p, step), m, v};
  });
}

} // namespace

unsigned mlir::fsdp::stepFactorCount(OptimizerAttrInterface optimizer) {
  return isa<AdamWAttr>(optimizer) ? 3 : 0;
}

void mlir::fsdp::buildStepFactors(OpBuilder &b, Location loc, OptimizerAttrInterface optimizer,
                                  Value step, Value lr, ValueRange factors) {
  auto adamw = cast<AdamWAttr>(optimizer);
  SmallVector<AffineMap> maps(factors.size(), AffineMap::get(0, 0, b.getContext()));
  linalg::GenericOp::create(b, loc, TypeRange{}, ValueRange{}, factors, maps,
                            ArrayRef<utils::IteratorType>{},
                            [&](OpBuilder &nb, Location nl, ValueRange) {
                              linalg::YieldOp::create(nb, nl,
                                                      adamWFactors(nb, nl, adamw, step, lr));
                            });
}

linalg::GenericOp mlir::fsdp::buildOptimizerUpdate(OpBuilder &b, Location loc,
                                                   OptimizerAttrInterface optimizer,
                                                   const UpdateOperands &operands) {
  return llvm::TypeSwitch<Attribute, linalg::GenericOp>(optimizer)
      .Case([&](SGDAttr sgd) { return buildSGD(b, loc, sgd, operands); })
      .Case([&](AdamWAttr adamw) { return buildAdamW(b, loc, adamw, operands); });
}
