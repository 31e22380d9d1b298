//===- ReductionPatterns.cpp - reductions, norms, losses to linalg --------===//
//
// Each op becomes reductions (linalg.generic with reduction iterators)
// followed by elementwise generics that read the reduced values through a
// map dropping the reduced dimensions. Normalisation gradients recompute the
// statistics rather than storing them.
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilders.h"

#include "fsdp/Conversion/FSDPToLinalg.h"
#include "fsdp/IR/FSDPOps.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

using namespace mlir;
using namespace mlir::fsdp;

namespace {

Value sumOf(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> dims) {
  return buildReduction(b, loc, input, dims, 0.0,
                        [](OpBuilder &nb, Location l, ValueRange a) {
                          return ScalarMath(nb, l).add(a[1], a[0]);
                        });
}

/// Multiplies every element by a constant.
Value scaled(OpBuilder &b, Location loc, Value input, double factor) {
  return buildElementwise(b, loc, tensorType(input), input,
                          [&](OpBuilder &nb, Location l, ValueRange a) {
                            ScalarMath m(nb, l);
                            return m.mul(a[0], m.constant(a[0], factor));
                          });
}

/// Maps for a generic over `full` reading full-shape inputs and then inputs
/// reduced over `dims`.
SmallVector<AffineMap> fullThenReduced(OpBuilder &b, RankedTensorType full,
                                       int64_t numFull, int64_t numReduced,
                                       ArrayRef<int64_t> dims) {
  SmallVector<AffineMap> maps(numFull, b.getMultiDimIdentityMap(full.getRank()));
  maps.append(numReduced, droppedDimsMap(b.getContext(), full.getRank(), dims));
  return maps;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

struct ReduceSumLowering : OpRewritePattern<ReduceSumOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReduceSumOp op, PatternRewriter &rewriter) const override {
    Value sum = sumOf(rewriter, op.getLoc(), op.getInput(), op.getDims());
    rewriter.replaceOp(op, castTo(rewriter, op.getLoc(), sum, op.getType()));
    return success();
  }
};

struct ReduceMeanLowering : OpRewritePattern<ReduceMeanOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReduceMeanOp op, PatternRewriter &rewriter) const override {
    int64_t count = 1;
    for (int64_t dim : op.getDims())
      count *= op.getInput().getType().getDimSize(dim);
    Value sum = sumOf(rewriter, op.getLoc(), op.getInput(), op.getDims());
    Value mean = scaled(rewriter, op.getLoc(), sum, 1.0 / count);
    rewriter.replaceOp(op, castTo(rewriter, op.getLoc(), mean, op.getType()));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Softmax
//===----------------------------------------------------------------------===//

/// softmax(x) along `dim`, shifted by the maximum for stability.
Value buildSoftmax(OpBuilder &b, Location loc, Value x, int64_t dim) {
  RankedTensorType type = tensorType(x);
  Value max = buildReduction(b, loc, x, dim, -INFINITY,
                             [](OpBuilder &nb, Location l, ValueRange a) {
                               return ScalarMath(nb, l).max(a[1], a[0]);
                             });
  // Intermediates stay f32: only the result is rounded.
  Value exps = buildParallel(b, loc, computeTensorType(type), {x, max},
                             fullThenReduced(b, type, 1, 1, dim),
                             [](OpBuilder &nb, Location l, ValueRange a) {
                               ScalarMath m(nb, l);
                               return m.exp(m.sub(a[0], a[1]));
                             });
  Value sum = sumOf(b, loc, exps, dim);
  return buildParallel(b, loc, type, {exps, sum}, fullThenReduced(b, type, 1, 1, dim),
                       [](OpBuilder &nb, Location l, ValueRange a) {
                         return ScalarMath(nb, l).div(a[0], a[1]);
                       });
}

struct SoftmaxLowering : OpRewritePattern<SoftmaxOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SoftmaxOp op, PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, buildSoftmax(rewriter, op.getLoc(), op.getInput(), op.getDim()));
    return success();
  }
};

// dx = y * (dy - sum(dy * y)).
struct SoftmaxGradLowering : OpRewritePattern<SoftmaxGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SoftmaxGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    int64_t dim = op.getDim();
    Value y = op.getOutput(), dy = op.getGrad();
    Value dot = buildReduction(rewriter, loc, {y, dy}, dim, 0.0,
                               [](OpBuilder &nb, Location l, ValueRange a) {
                                 ScalarMath m(nb, l);
                                 return m.add(a[2], m.mul(a[0], a[1]));
                               });
    rewriter.replaceOp(op, buildParallel(rewriter, loc, type, {y, dy, dot},
                                         fullThenReduced(rewriter, type, 2, 1, dim),
                                         [](OpBuilder &nb, Location l, ValueRange a) {
                                           ScalarMath m(nb, l);
                                           return m.mul(a[0], m.sub(a[1], a[2]));
                                         }));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Normalisation over the last dimension
//===----------------------------------------------------------------------===//

/// Statistics of a normalisation over the last dimension C.
struct NormStats {
  Value centered; // x - mean (layer norm) or x (RMS norm), full shape
  Value rstd;     // 1 / sqrt(var + eps), reduced shape
};

/// 1 / sqrt(sum of squares / C + eps), over the reduced shape.
Value reciprocalStd(OpBuilder &b, Location loc, Value squares, double inverseC, double eps) {
  return buildElementwise(b, loc, tensorType(squares), squares,
                          [&](OpBuilder &nb, Location l, ValueRange a) {
                            ScalarMath m(nb, l);
                            return m.rsqrt(m.add(m.mul(a[0], m.constant(a[0], inverseC)),
                                                 m.constant(a[0], eps)));
                          });
}

NormStats layerNormStats(OpBuilder &b, Location loc, Value x, double eps) {
  RankedTensorType type = tensorType(x);
  int64_t last = type.getRank() - 1;
  double inverseC = 1.0 / type.getShape().back();
  Value mean = scaled(b, loc, sumOf(b, loc, x, last), inverseC);
  Value centered =
      buildParallel(b, loc, computeTensorType(type), {x, mean},
                    fullThenReduced(b, type, 1, 1, last),
                    [](OpBuilder &nb, Location l, ValueRange a) {
                      return ScalarMath(nb, l).sub(a[0], a[1]);
                    });
  Value squares = buildReduction(b, loc, centered, last, 0.0,
                                 [](OpBuilder &nb, Location l, ValueRange a) {
                                   ScalarMath m(nb, l);
                                   return m.add(a[1], m.mul(a[0], a[0]));
                                 });
  return {centered, reciprocalStd(b, loc, squares, inverseC, eps)};
}

NormStats rmsNormStats(OpBuilder &b, Location loc, Value x, double eps) {
  RankedTensorType type = tensorType(x);
  double inverseC = 1.0 / type.getShape().back();
  Value squares = buildReduction(b, loc, x, type.getRank() - 1, 0.0,
                                 [](OpBuilder &nb, Location l, ValueRange a) {
                                   ScalarMath m(nb, l);
                                   return m.add(a[1], m.mul(a[0], a[0]));
                                 });
  return {x, reciprocalStd(b, loc, squares, inverseC, eps)};
}

/// xhat = centered * rstd over the full shape, in f32.
Value normalized(OpBuilder &b, Location loc, const NormStats &stats) {
  RankedTensorType type = computeTensorType(tensorType(stats.centered));
  return buildParallel(b, loc, type, {stats.centered, stats.rstd},
                       fullThenReduced(b, type, 1, 1, type.getRank() - 1),
                       [](OpBuilder &nb, Location l, ValueRange a) {
                         return ScalarMath(nb, l).mul(a[0], a[1]);
                       });
}

/// The gradients of a normalisation: dx, and dgamma in f32. `centerMean`
/// removes the mean of dxhat too (layer norm; RMS norm has no mean).
///
/// xhat = centered * rstd and dxhat = dy * gamma are computed where they are
/// read, never stored: as tensors they were two f32 copies of the activations
/// written and read again (and two kernels on the GPU), for the same values.
std::pair<Value, Value> normGradients(OpBuilder &b, Location loc, const NormStats &stats,
                                      Value gamma, Value dy, bool centerMean) {
  RankedTensorType type = tensorType(dy);
  int64_t rank = type.getRank(), last = rank - 1;
  double inverseC = 1.0 / type.getShape().back();
  MLIRContext *ctx = b.getContext();
  AffineMap full = b.getMultiDimIdentityMap(rank), row = droppedDimsMap(ctx, rank, last);
  AffineMap column = broadcastMap(ctx, tensorType(gamma).getShape(), type.getShape());
  // The bodies of dot, sum and dx read these first, in this order.
  SmallVector<Value> parts = {dy, gamma, stats.centered, stats.rstd};
  SmallVector<AffineMap> partMaps = {full, column, full, row};
  auto dxhat = [](ScalarMath &m, ValueRange a) { return m.mul(a[0], a[1]); };
  auto xhat = [](ScalarMath &m, Value centered, Value rstd) { return m.mul(centered, rstd); };

  Value dot = buildMappedReduction(b, loc, type, parts, partMaps, last, 0.0,
                                   [&](OpBuilder &nb, Location l, ValueRange a) {
                                     ScalarMath m(nb, l);
                                     return m.add(a[4], m.mul(dxhat(m, a), xhat(m, a[2], a[3])));
                                   });
  Value sum;
  if (centerMean)
    sum = buildMappedReduction(b, loc, type, {dy, gamma}, {full, column}, last, 0.0,
                               [&](OpBuilder &nb, Location l, ValueRange a) {
                                 ScalarMath m(nb, l);
                                 return m.add(a[2], dxhat(m, a));
                               });
  // dx reads the parts, then the rows' dot (a[4]) and sum (a[5]).
  SmallVector<Value> inputs(parts);
  inputs.push_back(dot);
  SmallVector<AffineMap> maps(partMaps);
  maps.push_back(row);
  if (sum) {
    inputs.push_back(sum);
    maps.push_back(row);
  }
  Value dx = buildParallel(b, loc, type, inputs, maps, [&](OpBuilder &nb, Location l, ValueRange a) {
    ScalarMath m(nb, l);
    Value c = m.constant(a[0], inverseC);
    Value inner = m.sub(dxhat(m, a), m.mul(xhat(m, a[2], a[3]), m.mul(a[4], c)));
    if (centerMean)
      inner = m.sub(inner, m.mul(a[5], c));
    return m.mul(a[3], inner);
  });
  Value dgamma = buildMappedReduction(b, loc, type, {dy, stats.centered, stats.rstd},
                                      {full, full, row}, leadingDims(rank), 0.0,
                                      [&](OpBuilder &nb, Location l, ValueRange a) {
                                        ScalarMath m(nb, l);
                                        return m.add(a[3], m.mul(a[0], xhat(m, a[1], a[2])));
                                      });
  return {dx, dgamma};
}

struct LayerNormLowering : OpRewritePattern<LayerNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LayerNormOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    NormStats stats =
        layerNormStats(rewriter, loc, op.getInput(), op.getEps().convertToDouble());
    Value xhat = normalized(rewriter, loc, stats);
    rewriter.replaceOp(op, buildElementwise(rewriter, loc, type,
                                            {xhat, op.getGamma(), op.getBeta()},
                                            [](OpBuilder &nb, Location l, ValueRange a) {
                                              ScalarMath m(nb, l);
                                              return m.add(m.mul(a[0], a[1]), a[2]);
                                            }));
    return success();
  }
};

struct RMSNormLowering : OpRewritePattern<RMSNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RMSNormOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    NormStats stats =
        rmsNormStats(rewriter, loc, op.getInput(), op.getEps().convertToDouble());
    Value xhat = normalized(rewriter, loc, stats);
    rewriter.replaceOp(op, buildElementwise(rewriter, loc, op.getType(),
                                            {xhat, op.getGamma()},
                                            [](OpBuilder &nb, Location l, ValueRange a) {
                                              return ScalarMath(nb, l).mul(a[0], a[1]);
                                            }));
    return success();
  }
};

struct LayerNormGradLowering : OpRewritePattern<LayerNormGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LayerNormGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    NormStats stats =
        layerNormStats(rewriter, loc, op.getInput(), op.getEps().convertToDouble());
    auto [dx, dgamma] =
        normGradients(rewriter, loc, stats, op.getGamma(), op.getGrad(), true);
    Value dbeta =
        sumOf(rewriter, loc, op.getGrad(), leadingDims(op.getInput().getType().getRank()));
    RankedTensorType gammaType = op.getGamma().getType();
    rewriter.replaceOp(op, {dx, castTo(rewriter, loc, dgamma, gammaType),
                            castTo(rewriter, loc, dbeta, gammaType)});
    return success();
  }
};

struct RMSNormGradLowering : OpRewritePattern<RMSNormGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RMSNormGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    NormStats stats =
        rmsNormStats(rewriter, loc, op.getInput(), op.getEps().convertToDouble());
    auto [dx, dgamma] =
        normGradients(rewriter, loc, stats, op.getGamma(), op.getGrad(), false);
    rewriter.replaceOp(op, {dx, castTo(rewriter, loc, dgamma, op.getGamma().getType())});
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

/// Logits as [N, C] and targets as [N].
std::pair<Value, Value> flattenPositions(OpBuilder &b, Location loc, Value logits,
                                         Value targets) {
  return {collapseLeading(b, loc, logits, 1), collapseLeading(b, loc, targets, 0)};
}

/// Row maxima and sums of exp(x - max) of [N, C] logits.
std::pair<Value, Value> logSumExpParts(OpBuilder &b, Location loc, Value logits) {
  RankedTensorType type = tensorType(logits);
  Value max = buildReduction(b, loc, logits, 1, -INFINITY,
                             [](OpBuilder &nb, Location l, ValueRange a) {
                               return ScalarMath(nb, l).max(a[1], a[0]);
                             });
  Value exps = buildParallel(b, loc, computeTensorType(type), {logits, max},
                             fullThenReduced(b, type, 1, 1, 1),
                             [](OpBuilder &nb, Location l, ValueRange a) {
                               ScalarMath m(nb, l);
                               return m.exp(m.sub(a[0], a[1]));
                             });
  return {max, sumOf(b, loc, exps, 1)};
}

struct CrossEntropyLowering : OpRewritePattern<CrossEntropyOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CrossEntropyOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto [logits, targets] =
        flattenPositions(rewriter, loc, op.getLogits(), op.getTargets());
    auto [max, sum] = logSumExpParts(rewriter, loc, logits);
    RankedTensorType rowsType = tensorType(max);
    // Per position: log(sum) + max - logits[n, target[n]].
    Value perPosition = buildElementwise(
        rewriter, loc, rowsType, {max, sum, targets},
        [&](OpBuilder &nb, Location l, ValueRange a) {
          ScalarMath m(nb, l);
          Value row = linalg::IndexOp::create(nb, l, 0);
          Value picked = tensor::ExtractOp::create(nb, l, logits,
                                                   ValueRange{row, m.toIndex(a[2])});
          if (picked.getType() != a[0].getType())
            picked = arith::ExtFOp::create(nb, l, a[0].getType(), picked);
          return m.sub(m.add(m.log(a[1]), a[0]), picked);
        });
    Value total = sumOf(rewriter, loc, perPosition, 0);
    rewriter.replaceOp(op, scaled(rewriter, loc, total, 1.0 / rowsType.getDimSize(0)));
    return success();
  }
};

/// The mean cross-entropy's gradient at one logit of probability `p`:
/// (p - 1 where it is the target's, else p) * dl / N.
Value crossEntropyGradAt(ScalarMath &m, Value p, Value isTarget, Value lossGrad, double inverseN) {
  Value oneHot = m.select(isTarget, m.constant(p, 1.0), m.constant(p, 0.0));
  return m.mul(m.sub(p, oneHot), m.mul(lossGrad, m.constant(p, inverseN)));
}

// dlogits = (softmax(logits) - onehot(target)) * dl / N.
struct CrossEntropyGradLowering : OpRewritePattern<CrossEntropyGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CrossEntropyGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto [logits, targets] =
        flattenPositions(rewriter, loc, op.getLogits(), op.getTargets());
    auto [max, sum] = logSumExpParts(rewriter, loc, logits);
    RankedTensorType type = tensorType(logits);
    MLIRContext *ctx = rewriter.getContext();
    SmallVector<AffineMap> maps = fullThenReduced(rewriter, type, 1, 3, 1);
    maps.push_back(AffineMap::get(2, 0, {}, ctx)); // the rank-0 loss gradient
    double inverseN = 1.0 / type.getDimSize(0);
    Value grad = buildParallel(
        rewriter, loc, type, {logits, max, sum, targets, op.getGrad()}, maps,
        [&](OpBuilder &nb, Location l, ValueRange a) {
          ScalarMath m(nb, l);
          Value p = m.div(m.exp(m.sub(a[0], a[1])), a[2]);
          Value isTarget =
              arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq, m.index(1),
                                    arith::ExtSIOp::create(nb, l, nb.getI64Type(), a[3]));
          return crossEntropyGradAt(m, p, isTarget, a[4], inverseN);
        });
    rewriter.replaceOp(op, expandLeading(rewriter, loc, grad, op.getType(), 1));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// The tensor ranks' cross-entropy: blocks of classes
//===----------------------------------------------------------------------===//

/// The (block, position) space of statistics [T, 3, N], which the combining
/// reductions run over.
RankedTensorType blocksByPositions(Value stats) {
  RankedTensorType type = tensorType(stats);
  return RankedTensorType::get({type.getDimSize(0), type.getDimSize(2)}, type.getElementType());
}

/// Reads statistic k (0 the maximum, 1 the sum, 2 the target's logit) of
/// block t at position n from the (t, n) space.
AffineMap statisticMap(MLIRContext *ctx, int64_t k) {
  return AffineMap::get(
      2, 0, {getAffineDimExpr(0, ctx), getAffineConstantExpr(k, ctx), getAffineDimExpr(1, ctx)},
      ctx);
}

/// Each position's log-sum-exp [N] over every block of classes, from their
/// statistics [T, 3, N]: M + log(sum_t s_t exp(m_t - M)) with M = max_t m_t.
Value combinedLogSumExp(OpBuilder &b, Location loc, Value stats) {
  MLIRContext *ctx = b.getContext();
  RankedTensorType space = blocksByPositions(stats);
  auto statistic = [&](int64_t k) { return statisticMap(ctx, k); };
  Value max = buildMappedReduction(
      b, loc, space, stats, statistic(0), 0, -INFINITY,
      [](OpBuilder &nb, Location l, ValueRange a) { return ScalarMath(nb, l).max(a[1], a[0]); });
  Value sum = buildMappedReduction(b, loc, space, {stats, stats, max},
                                   {statistic(1), statistic(0), droppedDimsMap(ctx, 2, 0)}, 0, 0.0,
                                   [](OpBuilder &nb, Location l, ValueRange a) {
                                     ScalarMath m(nb, l);
                                     return m.add(a[3], m.mul(a[0], m.exp(m.sub(a[1], a[2]))));
                                   });
  return buildElementwise(b, loc, tensorType(max), {max, sum},
                          [](OpBuilder &nb, Location l, ValueRange a) {
                            ScalarMath m(nb, l);
                            return m.add(a[0], m.log(a[1]));
                          });
}

struct CrossEntropyStatsLowering : OpRewritePattern<CrossEntropyStatsOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CrossEntropyStatsOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    auto [logits, targets] = flattenPositions(rewriter, loc, op.getLogits(), op.getTargets());
    auto [max, sum] = logSumExpParts(rewriter, loc, logits);
    int64_t block = tensorType(logits).getDimSize(1);
    // The target's logit where this block holds the target, else 0: one
    // block of the ranks' holds each target.
    Value picked = buildParallel(
        rewriter, loc, tensorType(max), {targets, op.getFirst()},
        {rewriter.getMultiDimIdentityMap(1), singleElementMap(ctx, 1)},
        [&](OpBuilder &nb, Location l, ValueRange a) {
          ScalarMath m(nb, l);
          Value column = arith::SubIOp::create(nb, l, m.toI64(a[0]), m.toI64(a[1]));
          Value zero = m.i64(0);
          Value inside = arith::AndIOp::create(
              nb, l, arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sge, column, zero),
              arith::CmpIOp::create(nb, l, arith::CmpIPredicate::slt, column, m.i64(block)));
          Value safe = arith::SelectOp::create(nb, l, inside, column, zero);
          Value row = linalg::IndexOp::create(nb, l, 0);
          Value logit = gatherElement(nb, l, logits, {row, m.toIndex(safe)});
          return m.select(inside, logit, m.constant(logit, 0.0));
        });
    // Rows 0, 1, 2 of [1, 3, N]: the maxima, the sums, the target logits.
    AffineMap position = AffineMap::get(3, 0, {getAffineDimExpr(2, ctx)}, ctx);
    Value stats = buildParallel(
        rewriter, loc, op.getType(), {max, sum, picked}, {position, position, position},
        [&](OpBuilder &nb, Location l, ValueRange a) {
          ScalarMath m(nb, l);
          Value row = m.index(1);
          auto isRow = [&](int64_t k) {
            return arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq, row, m.i64(k));
          };
          return m.select(isRow(0), a[0], m.select(isRow(1), a[1], a[2]));
        });
    rewriter.replaceOp(op, stats);
    return success();
  }
};

struct CrossEntropyCombineLowering : OpRewritePattern<CrossEntropyCombineOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CrossEntropyCombineOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value stats = op.getStats();
    RankedTensorType space = blocksByPositions(stats);
    Value lse = combinedLogSumExp(rewriter, loc, stats);
    Value picked = buildMappedReduction(
        rewriter, loc, space, stats, statisticMap(rewriter.getContext(), 2), 0, 0.0,
        [](OpBuilder &nb, Location l, ValueRange a) { return ScalarMath(nb, l).add(a[1], a[0]); });
    Value perPosition = buildElementwise(
        rewriter, loc, tensorType(lse), {lse, picked},
        [](OpBuilder &nb, Location l, ValueRange a) { return ScalarMath(nb, l).sub(a[0], a[1]); });
    Value total = sumOf(rewriter, loc, perPosition, 0);
    rewriter.replaceOp(op, scaled(rewriter, loc, total, 1.0 / space.getDimSize(1)));
    return success();
  }
};

// dlogits = (exp(logits - lse) - onehot(target - first)) * dl / N.
struct CrossEntropyBlockGradLowering : OpRewritePattern<CrossEntropyBlockGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CrossEntropyBlockGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    auto [logits, targets] = flattenPositions(rewriter, loc, op.getLogits(), op.getTargets());
    Value lse = combinedLogSumExp(rewriter, loc, op.getStats());
    RankedTensorType type = tensorType(logits);
    SmallVector<AffineMap> maps = fullThenReduced(rewriter, type, 1, 2, 1);
    maps.push_back(singleElementMap(ctx, 2));
    maps.push_back(AffineMap::get(2, 0, {}, ctx)); // the rank-0 loss gradient
    double inverseN = 1.0 / type.getDimSize(0);
    Value grad = buildParallel(
        rewriter, loc, type, {logits, lse, targets, op.getFirst(), op.getGrad()}, maps,
        [&](OpBuilder &nb, Location l, ValueRange a) {
          ScalarMath m(nb, l);
          Value p = m.exp(m.sub(a[0], a[1]));
          Value column = arith::AddIOp::create(nb, l, m.index(1), m.toI64(a[3]));
          Value isTarget =
              arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq, column, m.toI64(a[2]));
          return crossEntropyGradAt(m, p, isTarget, a[4], inverseN);
        });
    rewriter.replaceOp(op, expandLeading(rewriter, loc, grad, op.getType(), 1));
    return success();
  }
};

struct MSELowering : OpRewritePattern<MSEOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MSEOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getPrediction().getType();
    auto all = llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
    Value total = buildReduction(rewriter, loc, {op.getPrediction(), op.getTarget()}, all,
                                 0.0, [](OpBuilder &nb, Location l, ValueRange a) {
                                   ScalarMath m(nb, l);
                                   Value d = m.sub(a[0], a[1]);
                                   return m.add(a[2], m.mul(d, d));
                                 });
    rewriter.replaceOp(op, scaled(rewriter, loc, total, 1.0 / type.getNumElements()));
    return success();
  }
};

} // namespace

void mlir::fsdp::populateFSDPReductionToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<ReduceSumLowering, ReduceMeanLowering, SoftmaxLowering, SoftmaxGradLowering,
               LayerNormLowering, RMSNormLowering, LayerNormGradLowering, RMSNormGradLowering,
               CrossEntropyLowering, CrossEntropyGradLowering, CrossEntropyStatsLowering,
               CrossEntropyCombineLowering, CrossEntropyBlockGradLowering, MSELowering>(
      patterns.getContext());
}
