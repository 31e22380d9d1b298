//===- FSDPGradients.cpp - gradient rules of the model ops ----------------===//
//
// Each model op's DifferentiableOpInterface::buildGradients: the vector-
// Jacobian product written with fsdp ops, so the backward pass is itself
// fsdp IR that every later pass (sharding, lowering) understands.
//
//===----------------------------------------------------------------------===//

#include "fsdp/IR/FSDPOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::fsdp;

static RankedTensorType tensorType(Value value) {
  return llvm::cast<RankedTensorType>(value.getType());
}

/// Sums `grad` (of a broadcast result) back to the shape of an operand of
/// type `target`: over the leading dimensions the operand lacks and over the
/// dimensions where it has size 1.
static Value unbroadcast(OpBuilder &b, Location loc, Value grad, Type target) {
  auto targetType = llvm::cast<RankedTensorType>(target);
  ArrayRef<int64_t> from = tensorType(grad).getShape();
  ArrayRef<int64_t> to = targetType.getShape();
  if (from == to)
    return grad;
  int64_t lead = from.size() - to.size();
  SmallVector<int64_t> dims;
  for (int64_t i = 0, e = from.size(); i < e; ++i)
    if (i < lead || (to[i - lead] == 1 && from[i] != 1))
      dims.push_back(i);
  Value summed = dims.empty() ? grad : ReduceSumOp::create(b, loc, grad, dims).getResult();
  if (summed.getType() == target)
    return summed;
  return ReshapeOp::create(b, loc, target, summed);
}

/// Swaps the last two dimensions.
static Value transposeLastTwo(OpBuilder &b, Location loc, Value value) {
  int64_t rank = tensorType(value).getRank();
  SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  std::swap(perm[rank - 1], perm[rank - 2]);
  return TransposeOp::create(b, loc, value, perm);
}

/// Collapses every dimension but the last into one: [..., K] -> [prod, K].
static Value flattenToMatrix(OpBuilder &b, Location loc, Value value) {
  RankedTensorType type = tensorType(value);
  if (type.getRank() == 2)
    return value;
  int64_t cols = type.getShape().back();
  auto matrix = RankedTensorType::get({type.getNumElements() / cols, cols},
                                      type.getElementType());
  return ReshapeOp::create(b, loc, matrix, value);
}

static Value negate(OpBuilder &b, Location loc, Value value) {
  return ScaleOp::create(b, loc, value, llvm::APFloat(-1.0));
}

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

// Y = op(A) @ op(B), A: [..., M, K] after op, B: [K, N] after op.
void MatmulOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value dy = resultGrads[0];
  bool ta = getTransposeLhs(), tb = getTransposeRhs();

  // d op(A) = dY @ op(B)^T, then undo A's transpose.
  Value dOpA = MatmulOp::create(b, loc, dy, getRhs(), false, !tb);
  operandGrads.push_back(ta ? transposeLastTwo(b, loc, dOpA) : dOpA);

  // d op(B) = op(A)^T @ dY summed over A's leading dimensions.
  Value opA = ta ? transposeLastTwo(b, loc, getLhs()) : getLhs();
  Value a2 = flattenToMatrix(b, loc, opA), dy2 = flattenToMatrix(b, loc, dy);
  operandGrads.push_back(tb ? MatmulOp::create(b, loc, dy2, a2, true, false).getResult()
                            : MatmulOp::create(b, loc, a2, dy2, true, false).getResult());
}

// Y = op(A) @ op(B) per batch.
void BatchMatmulOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                   SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value dy = resultGrads[0], lhs = getLhs(), rhs = getRhs();
  bool ta = getTransposeLhs(), tb = getTransposeRhs();
  // dA = dY @ op(B)^T, or its transpose op(B) @ dY^T when A was transposed.
  operandGrads.push_back(ta ? BatchMatmulOp::create(b, loc, rhs, dy, tb, true)
                            : BatchMatmulOp::create(b, loc, dy, rhs, false, !tb));
  // dB = op(A)^T @ dY, or its transpose dY^T @ op(A) when B was transposed.
  operandGrads.push_back(tb ? BatchMatmulOp::create(b, loc, dy, lhs, true, ta)
                            : BatchMatmulOp::create(b, loc, lhs, dy, !ta, false));
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

void AddOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                           SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(unbroadcast(b, getLoc(), resultGrads[0], getLhs().getType()));
  operandGrads.push_back(unbroadcast(b, getLoc(), resultGrads[0], getRhs().getType()));
}

void SubOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                           SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  operandGrads.push_back(unbroadcast(b, loc, resultGrads[0], getLhs().getType()));
  operandGrads.push_back(
      unbroadcast(b, loc, negate(b, loc, resultGrads[0]), getRhs().getType()));
}

void MulOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                           SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value dy = resultGrads[0];
  operandGrads.push_back(
      unbroadcast(b, loc, MulOp::create(b, loc, dy, getRhs()), getLhs().getType()));
  operandGrads.push_back(
      unbroadcast(b, loc, MulOp::create(b, loc, dy, getLhs()), getRhs().getType()));
}

// y = a / b: da = dy / b, db = -dy * y / b.
void DivOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                           SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value dy = resultGrads[0];
  Value da = DivOp::create(b, loc, dy, getRhs());
  operandGrads.push_back(unbroadcast(b, loc, da, getLhs().getType()));
  Value db = negate(b, loc, MulOp::create(b, loc, da, getResult()));
  operandGrads.push_back(unbroadcast(b, loc, db, getRhs().getType()));
}

void ScaleOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                             SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(ScaleOp::create(b, getLoc(), resultGrads[0], getFactor()));
}

void ReluOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                            SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(ReluGradOp::create(b, getLoc(), getInput(), resultGrads[0]));
}

void GeluOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                            SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(GeluGradOp::create(b, getLoc(), getInput(), resultGrads[0]));
}

void SiluOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                            SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(SiluGradOp::create(b, getLoc(), getInput(), resultGrads[0]));
}

// y = tanh x: dx = dy - dy * y * y.
void TanhOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                            SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value dy = resultGrads[0], y = getResult();
  Value dyy2 = MulOp::create(b, loc, MulOp::create(b, loc, dy, y), y);
  operandGrads.push_back(SubOp::create(b, loc, dy, dyy2));
}

// y = exp x: dx = dy * y.
void ExpOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                           SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(MulOp::create(b, getLoc(), resultGrads[0], getResult()));
}

void BroadcastOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                 SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(
      unbroadcast(b, getLoc(), resultGrads[0], getInput().getType()));
}

void ConvertOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                               SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(
      ConvertOp::create(b, getLoc(), getInput().getType(), resultGrads[0]));
}

//===----------------------------------------------------------------------===//
// Tensor-parallel regions: each one's gradient is the other
//===----------------------------------------------------------------------===//

// Every tensor rank's block reads the same input, so its gradient is the sum
// of theirs.
void TensorCopyOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                  SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(TensorSumOp::create(b, getLoc(), resultGrads[0]));
}

// The sum is whole on every rank, so is its gradient: each part gets it.
void TensorSumOp::buildGradients(OpBuilder &, ValueRange resultGrads,
                                 SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(resultGrads[0]);
}

// Sequence blocks: the gathers and scatters are each other's gradient, as are
// the chunk and the unchunk; each gradient has its operand's type.
void TensorAllGatherOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(
      TensorReduceScatterOp::create(b, getLoc(), getInput().getType(), resultGrads[0], getDim()));
}

void TensorReduceScatterOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                           SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(
      TensorAllGatherOp::create(b, getLoc(), getInput().getType(), resultGrads[0], getDim()));
}

void TensorChunkOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                   SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(
      TensorUnchunkOp::create(b, getLoc(), getInput().getType(), resultGrads[0], getDim()));
}

void TensorUnchunkOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(
      TensorChunkOp::create(b, getLoc(), getInput().getType(), resultGrads[0], getDim()));
}

//===----------------------------------------------------------------------===//
// Normalisation and attention
//===----------------------------------------------------------------------===//

void SoftmaxOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                               SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(
      SoftmaxGradOp::create(b, getLoc(), getResult(), resultGrads[0], getDim()));
}

void AttentionOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                 SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  // A result nobody differentiates has a zero gradient (usually the
  // log-sum-exp, which models ignore).
  auto gradOf = [&](unsigned index) -> Value {
    if (resultGrads[index])
      return resultGrads[index];
    auto type = llvm::cast<RankedTensorType>(getOperation()->getResult(index).getType());
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(type, b.getZeroAttr(type.getElementType())));
  };
  auto grads = AttentionGradOp::create(
      b, loc, getQuery(), getKey(), getValue(), getResult(), getLse(), gradOf(0), gradOf(1),
      getCausalAttr(), getWindowAttr(), getScaleAttr(), getSoftcapAttr(), getKeyBlockAttr());
  operandGrads.append({grads.getQueryGrad(), grads.getKeyGrad(), grads.getValueGrad()});
}

void LayerNormOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                 SmallVectorImpl<Value> &operandGrads) {
  auto grads = LayerNormGradOp::create(b, getLoc(), getInput(), getGamma(),
                                       resultGrads[0], getEpsAttr());
  operandGrads.append({grads.getInputGrad(), grads.getGammaGrad(), grads.getBetaGrad()});
}

void RMSNormOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                               SmallVectorImpl<Value> &operandGrads) {
  auto grads = RMSNormGradOp::create(b, getLoc(), getInput(), getGamma(),
                                     resultGrads[0], getEpsAttr());
  operandGrads.append({grads.getInputGrad(), grads.getGammaGrad()});
}

void CausalMaskOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                  SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(CausalMaskGradOp::create(b, getLoc(), resultGrads[0]));
}

// A rotation's transpose is its inverse: the gradient rotates back (times
// the same attention factor, which a transpose keeps).
void RopeOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                            SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(RopeOp::create(b, getLoc(), resultGrads[0], getPositionsAttr(),
                                        getThetaAttr(), getRotaryDimAttr(), getLinearScalingAttr(),
                                        getScalingAttr(), getYarnAttr(),
                                        getInverse() ? UnitAttr() : b.getUnitAttr()));
}

//===----------------------------------------------------------------------===//
// Lookup and layout
//===----------------------------------------------------------------------===//

void EmbeddingOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                 SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(EmbeddingGradOp::create(b, getLoc(), getTable().getType(),
                                                 getIndices(), resultGrads[0]));
  operandGrads.push_back(Value()); // Indices are not differentiable.
}

// The whole lookup's gradient, which every rank holds, into the block's rows.
void TensorEmbeddingOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(TensorEmbeddingGradOp::create(b, getLoc(), getTable().getType(),
                                                       getIndices(), resultGrads[0], getRows()));
  operandGrads.push_back(Value()); // Indices are not differentiable.
}

void ReshapeOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                               SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(
      ReshapeOp::create(b, getLoc(), getInput().getType(), resultGrads[0]));
}

void TransposeOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                 SmallVectorImpl<Value> &operandGrads) {
  ArrayRef<int64_t> perm = getPermutation();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, dim] : llvm::enumerate(perm))
    inverse[dim] = i;
  operandGrads.push_back(TransposeOp::create(b, getLoc(), resultGrads[0], inverse));
}

void SliceOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                             SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(SliceGradOp::create(b, getLoc(), getInput().getType(),
                                             resultGrads[0], getDim(), getOffset()));
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// Spreads the gradient of a reduction back over the reduced dimensions.
static Value spreadReduction(OpBuilder &b, Location loc, Value grad, Type inputType,
                             ArrayRef<int64_t> dims) {
  auto input = llvm::cast<RankedTensorType>(inputType);
  SmallVector<int64_t> kept(input.getShape());
  for (int64_t dim : dims)
    kept[dim] = 1;
  Value keptDims = ReshapeOp::create(
      b, loc, RankedTensorType::get(kept, input.getElementType()), grad);
  return BroadcastOp::create(b, loc, input, keptDims);
}

void ReduceSumOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                 SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(spreadReduction(b, getLoc(), resultGrads[0],
                                         getInput().getType(), getDims()));
}

void ReduceMeanOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                  SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  int64_t count = 1;
  for (int64_t dim : getDims())
    count *= getInput().getType().getDimSize(dim);
  Value spread =
      spreadReduction(b, loc, resultGrads[0], getInput().getType(), getDims());
  operandGrads.push_back(
      ScaleOp::create(b, loc, spread, llvm::APFloat(1.0 / static_cast<double>(count))));
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

void CrossEntropyOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(CrossEntropyGradOp::create(b, getLoc(), getLogits(),
                                                    getTargets(), resultGrads[0]));
  operandGrads.push_back(Value()); // Targets are not differentiable.
}

// Each rank's block of the logits gets its block of the gradient.
void TensorCrossEntropyOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                          SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(TensorCrossEntropyGradOp::create(b, getLoc(), getLogits(), getTargets(),
                                                          resultGrads[0], getClasses()));
  operandGrads.push_back(Value()); // Targets are not differentiable.
}

// l = mean((p - t)^2): dp = (2 / n) (p - t) dl, dt = -dp.
void MSEOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                           SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  double count = static_cast<double>(getPrediction().getType().getNumElements());
  Value diff = SubOp::create(b, loc, getPrediction(), getTarget());
  Value scaled = ScaleOp::create(b, loc, diff, llvm::APFloat(2.0 / count));
  // The loss (so its gradient) is f32 whatever the prediction's type.
  Value dl = resultGrads[0];
  auto dlType = llvm::cast<RankedTensorType>(dl.getType());
  Type element = getPrediction().getType().getElementType();
  if (dlType.getElementType() != element)
    dl = ConvertOp::create(b, loc, dlType.clone(element), dl);
  Value dp = MulOp::create(b, loc, scaled, dl);
  operandGrads.push_back(dp);
  operandGrads.push_back(negate(b, loc, dp));
}
