//===- RotaryPatterns.cpp - fsdp.rope to linalg ---------------------------===//
//
// A rotary embedding is elementwise work on pairs of features. Each
// (position, frequency)'s cosine and sine are computed once, into two tables
// of [T, R/2] that every rotation of the same positions, rotary dimension,
// base and scaling in the function reads (q and k, forward, recompute and
// backward): an element then costs two loads and four operations, where it
// computed an f64 exp2, a cosine and a sine. When every feature turns they
// are viewed as [..., 2, D/2], so that a feature's partner is the same index
// of the other half (an affine map, 1 - h).
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilders.h"

#include "fsdp/Conversion/FSDPToLinalg.h"
#include "fsdp/IR/FSDPOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::fsdp;

namespace {

/// YaRN's frequency `j` (i64) from the unscaled `f` (f64): f (g / factor + 1 - g)
/// with g frequency j's place on the ramp, clamp((j - low) / (high - low), 0, 1).
Value yarnFrequency(OpBuilder &b, Location loc, RopeOp op, YarnRopeScalingAttr yarn, Value j,
                    Value f) {
  Type f64 = b.getF64Type();
  auto constant = [&](double value) { return constantFloat(b, loc, f64, value); };
  ScalarMath m(b, loc);
  auto [low, high] = yarn.rampRange(op.getRotaryDimValue(), op.getTheta().convertToDouble());
  Value jf = arith::SIToFPOp::create(b, loc, f64, j);
  Value ramp = m.div(m.sub(jf, constant(low)), constant(high - low));
  Value g = m.min(m.max(ramp, constant(0.0)), constant(1.0));
  Value keep = m.sub(constant(1.0), g);
  return m.mul(f, m.add(m.div(g, constant(yarn.getFactor().convertToDouble())), keep));
}

/// Frequency `j` of `op` (i64) in f64: theta^(-2j / r), then its scaling:
/// linear (every frequency divided), YaRN's, or Llama 3's (Hugging Face's
/// _compute_llama3_parameters: kept above the high bound, divided below the
/// low one, smooth between).
Value frequency(OpBuilder &b, Location loc, RopeOp op, Value j) {
  Type f64 = b.getF64Type();
  auto constant = [&](double value) { return constantFloat(b, loc, f64, value); };
  double rotary = static_cast<double>(op.getRotaryDimValue());
  double exponent = -2.0 * std::log2(op.getTheta().convertToDouble()) / rotary;
  Value jf = arith::SIToFPOp::create(b, loc, f64, j);
  Value f = math::Exp2Op::create(b, loc, arith::MulFOp::create(b, loc, jf, constant(exponent)));
  ScalarMath m(b, loc);
  if (FloatAttr linear = op.getLinearScalingAttr())
    return m.div(f, constant(linear.getValueAsDouble()));
  if (YarnRopeScalingAttr yarn = op.getYarnAttr())
    return yarnFrequency(b, loc, op, yarn, j, f);
  Llama3RopeScalingAttr scaling = op.getScalingAttr();
  if (!scaling)
    return f;
  double factor = scaling.getFactor().convertToDouble();
  double low = scaling.getLowFreqFactor().convertToDouble();
  double high = scaling.getHighFreqFactor().convertToDouble();
  double context = static_cast<double>(scaling.getOriginalMaxPositions());
  Value wavelength = m.div(constant(2.0 * llvm::numbers::pi), f);
  // (1 - s) f / factor + s f, with s = (context / wavelength - low) / (high - low).
  Value s = m.div(m.sub(m.div(constant(context), wavelength), constant(low)), constant(high - low));
  Value scaled = m.div(f, constant(factor));
  Value smooth = m.add(m.mul(m.sub(constant(1.0), s), scaled), m.mul(s, f));
  Value mid = m.select(m.greater(wavelength, constant(context / low)), scaled, smooth);
  return m.select(m.greater(constant(context / high), wavelength), f, mid);
}

/// The cosines (`sine` false) or sines of `op`'s angles, [T, R/2] in f32: at
/// position t and frequency j, of f32(t) * f32(frequency(j)), as the op
/// defines them. One per function for each kind of rotation, at its start,
/// where every rotation can read it, marked by kRotaryTableAttr with what it
/// depends on: [positions, rotary dimension, base, scaling, 0 for cosines or
/// 1 for sines].
Value rotaryTable(OpBuilder &b, RopeOp op, bool sine) {
  int64_t positions = op.getType().getShape()[op.getPositions()];
  MLIRContext *ctx = b.getContext();
  Attribute scaling = op.getLinearScalingAttr() ? Attribute(op.getLinearScalingAttr())
                      : op.getScalingAttr()     ? Attribute(op.getScalingAttr())
                      : op.getYarnAttr()        ? Attribute(op.getYarnAttr())
                                                : UnitAttr::get(ctx);
  auto key = ArrayAttr::get(ctx, {b.getI64IntegerAttr(positions),
                                  b.getI64IntegerAttr(op.getRotaryDimValue()), op.getThetaAttr(),
                                  scaling, b.getI64IntegerAttr(sine)});
  Block &entry = op->getParentOfType<FunctionOpInterface>().getFunctionBody().front();
  for (auto generic : entry.getOps<linalg::GenericOp>())
    if (generic->getAttr(kRotaryTableAttr) == key)
      return generic.getResult(0);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&entry);
  Location loc = op.getLoc();
  auto type = RankedTensorType::get({positions, op.getRotaryDimValue() / 2}, b.getF32Type());
  Value table = buildParallel(b, loc, type, {}, {}, [&](OpBuilder &nb, Location nloc, ValueRange) {
    ScalarMath m(nb, nloc);
    Type f32 = nb.getF32Type();
    Value f = arith::TruncFOp::create(nb, nloc, f32, frequency(nb, nloc, op, m.index(1)));
    Value position = arith::SIToFPOp::create(nb, nloc, f32, m.index(0));
    Value angle = arith::MulFOp::create(nb, nloc, position, f);
    Value value = sine ? math::SinOp::create(nb, nloc, angle).getResult()
                       : math::CosOp::create(nb, nloc, angle).getResult();
    // YaRN's attention factor, as Hugging Face multiplies its f32 tables.
    if (YarnRopeScalingAttr yarn = op.getYarnAttr())
      value = m.mul(value, m.constant(value, yarn.getAttentionFactor().convertToDouble()));
    return value;
  });
  table.getDefiningOp()->setAttr(kRotaryTableAttr, key);
  return table;
}

/// An element of the rotated features from itself, its partner, which half
/// of the pair it is in (i64, 0 or 1) and its angle's cosine and sine (f32).
Value rotate(OpBuilder &b, Location loc, RopeOp op, Value x, Value partner, Value half,
             Value cos, Value sin) {
  ScalarMath m(b, loc);
  Type f32 = b.getF32Type();
  // The first half takes -partner sin, the second +partner sin; the inverse
  // rotation the opposite.
  Value second = arith::SIToFPOp::create(b, loc, f32, half);
  Value sign = m.sub(m.mul(m.constant(second, 2.0), second), m.constant(second, 1.0));
  if (op.getInverse())
    sign = m.sub(m.constant(sign, 0.0), sign);
  return m.add(m.mul(x, cos), m.mul(m.mul(sign, partner), sin));
}

/// [..., D] -> [..., 2, D/2]: the last dimension split into its halves.
SmallVector<ReassociationIndices> halvesReassociation(int64_t rank) {
  SmallVector<ReassociationIndices> groups;
  for (int64_t dim = 0; dim + 1 < rank; ++dim)
    groups.push_back({dim});
  groups.push_back({rank - 1, rank});
  return groups;
}

/// Every feature turns: over [..., 2, D/2], a feature's partner is the same
/// index of the other half, an affine map (1 - h).
Value rotateAll(OpBuilder &b, Location loc, RopeOp op) {
  RankedTensorType type = op.getType();
  int64_t rank = type.getRank();
  SmallVector<int64_t> shape(type.getShape().drop_back());
  shape.append({2, type.getShape().back() / 2});
  RankedTensorType halvesType = type.clone(shape);
  Value halves =
      tensor::ExpandShapeOp::create(b, loc, halvesType, op.getInput(), halvesReassociation(rank));
  MLIRContext *ctx = b.getContext();
  AffineMap identity = b.getMultiDimIdentityMap(rank + 1);
  SmallVector<AffineExpr> partnerExprs(identity.getResults());
  partnerExprs[rank - 1] = 1 - getAffineDimExpr(rank - 1, ctx);
  AffineMap partner = AffineMap::get(rank + 1, 0, partnerExprs, ctx);
  // The tables at (position, frequency).
  AffineMap angle = AffineMap::get(
      rank + 1, 0, {getAffineDimExpr(op.getPositions(), ctx), getAffineDimExpr(rank, ctx)}, ctx);
  Value rotated = buildParallel(
      b, loc, halvesType, {halves, halves, rotaryTable(b, op, false), rotaryTable(b, op, true)},
      {identity, partner, angle, angle}, [&](OpBuilder &nb, Location nloc, ValueRange args) {
        ScalarMath m(nb, nloc);
        return rotate(nb, nloc, op, args[0], args[1], m.index(rank - 1), args[2], args[3]);
      });
  return tensor::CollapseShapeOp::create(b, loc, rotated, halvesReassociation(rank));
}

/// The first `rotary_dim` features turn, the others pass: over [..., D], the
/// partner of feature i < r is read at i + r/2 or i - r/2 (a gather, as an
/// embedding's rows are), so that one generic writes the whole result (slices
/// of it written in place would leave strided copies to the buffers).
Value rotateFirst(OpBuilder &b, Location loc, RopeOp op) {
  RankedTensorType type = op.getType();
  int64_t rank = type.getRank(), rotary = op.getRotaryDimValue();
  Value input = op.getInput();
  Value cosines = rotaryTable(b, op, false), sines = rotaryTable(b, op, true);
  return buildElementwise(b, loc, type, input, [&](OpBuilder &nb, Location nloc, ValueRange args) {
    ScalarMath m(nb, nloc);
    auto constant = [&](int64_t value) {
      return arith::ConstantIntOp::create(nb, nloc, nb.getI64Type(), value);
    };
    auto less = [&](Value x, Value y) {
      return arith::CmpIOp::create(nb, nloc, arith::CmpIPredicate::slt, x, y);
    };
    Value feature = m.index(rank - 1);
    Value first = less(feature, constant(rotary / 2));
    Value turns = less(feature, constant(rotary));
    Value shift =
        arith::SelectOp::create(nb, nloc, first, constant(rotary / 2), constant(-rotary / 2));
    Value partnerFeature = arith::SelectOp::create(
        nb, nloc, turns, arith::AddIOp::create(nb, nloc, feature, shift), feature);
    SmallVector<Value> coordinates = iterationIndices(nb, nloc, rank);
    coordinates.back() = m.toIndex(partnerFeature);
    Value partner = gatherElement(nb, nloc, input, coordinates);
    Value second = arith::SelectOp::create(nb, nloc, first, constant(0), constant(1));
    // A feature that does not turn reads the tables at frequency 0.
    Value frequency = arith::SelectOp::create(
        nb, nloc, first, feature, arith::SubIOp::create(nb, nloc, feature, constant(rotary / 2)));
    frequency = arith::SelectOp::create(nb, nloc, turns, frequency, constant(0));
    SmallVector<Value> at = {coordinates[op.getPositions()], m.toIndex(frequency)};
    Value cos = gatherElement(nb, nloc, cosines, at), sin = gatherElement(nb, nloc, sines, at);
    return m.select(turns, rotate(nb, nloc, op, args[0], partner, second, cos, sin), args[0]);
  });
}

struct RopeLowering : OpRewritePattern<RopeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(RopeOp op, PatternRewriter &rewriter) const override {
    bool all = op.getRotaryDimValue() == op.getType().getShape().back();
    rewriter.replaceOp(op, all ? rotateAll(rewriter, op.getLoc(), op)
                               : rotateFirst(rewriter, op.getLoc(), op));
    return success();
  }
};

} // namespace

void mlir::fsdp::populateFSDPRotaryToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<RopeLowering>(patterns.getContext());
}
