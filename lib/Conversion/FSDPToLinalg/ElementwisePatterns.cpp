//===- ElementwisePatterns.cpp - elementwise fsdp ops to linalg -----------===//

#include "LinalgBuilders.h"

#include "fsdp/Conversion/FSDPToLinalg.h"
#include "fsdp/IR/FSDPOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::fsdp;

namespace {

/// Lowers an op computed element by element over its (broadcast) result
/// from the elements of its operands.
template <typename OpTy>
struct ElementwiseLowering : OpRewritePattern<OpTy> {
  using BodyFn = Value (*)(OpTy, ScalarMath &, ValueRange);

  ElementwiseLowering(MLIRContext *ctx, BodyFn body)
      : OpRewritePattern<OpTy>(ctx), body(body) {}

  LogicalResult matchAndRewrite(OpTy op, PatternRewriter &rewriter) const override {
    auto type = llvm::cast<RankedTensorType>(op->getResult(0).getType());
    Value result = buildElementwise(
        rewriter, op.getLoc(), type, op->getOperands(),
        [&](OpBuilder &b, Location loc, ValueRange args) {
          ScalarMath math(b, loc);
          return body(op, math, args);
        });
    rewriter.replaceOp(op, result);
    return success();
  }

  BodyFn body;
};

// GELU, tanh form: 0.5 x (1 + tanh(k (x + c x^3))).
constexpr double kGeluScale = 0.7978845608028654; // sqrt(2 / pi)
constexpr double kGeluCubic = 0.044715;

Value geluTanhArgument(ScalarMath &m, Value x) {
  Value x3 = m.mul(m.mul(x, x), x);
  return m.mul(m.constant(x, kGeluScale), m.add(x, m.mul(m.constant(x, kGeluCubic), x3)));
}

Value gelu(ScalarMath &m, Value x) {
  Value t = m.tanh(geluTanhArgument(m, x));
  return m.mul(m.mul(m.constant(x, 0.5), x), m.add(m.constant(x, 1.0), t));
}

// d/dx gelu = 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2).
Value geluDerivative(ScalarMath &m, Value x) {
  Value half = m.constant(x, 0.5), one = m.constant(x, 1.0);
  Value t = m.tanh(geluTanhArgument(m, x));
  Value inner = m.mul(m.constant(x, kGeluScale),
                      m.add(one, m.mul(m.constant(x, 3.0 * kGeluCubic), m.mul(x, x))));
  Value left = m.mul(half, m.add(one, t));
  Value right = m.mul(m.mul(m.mul(half, x), m.sub(one, m.mul(t, t))), inner);
  return m.add(left, right);
}

Value sigmoid(ScalarMath &m, Value x) {
  Value one = m.constant(x, 1.0);
  return m.div(one, m.add(one, m.exp(m.sub(m.constant(x, 0.0), x))));
}

/// Whether the element at the generic's current index is a future position
/// of a (query x key) trailing matrix.
Value isFuturePosition(ScalarMath &m, int64_t rank) {
  return m.greaterInt(m.index(rank - 1), m.index(rank - 2));
}

int64_t rankOf(Value value) {
  return llvm::cast<RankedTensorType>(value.getType()).getRank();
}

} // namespace

void mlir::fsdp::populateFSDPElementwiseToLinalgPatterns(RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<ElementwiseLowering<AddOp>>(
      ctx, [](AddOp, ScalarMath &m, ValueRange a) { return m.add(a[0], a[1]); });
  patterns.add<ElementwiseLowering<SubOp>>(
      ctx, [](SubOp, ScalarMath &m, ValueRange a) { return m.sub(a[0], a[1]); });
  patterns.add<ElementwiseLowering<MulOp>>(
      ctx, [](MulOp, ScalarMath &m, ValueRange a) { return m.mul(a[0], a[1]); });
  patterns.add<ElementwiseLowering<DivOp>>(
      ctx, [](DivOp, ScalarMath &m, ValueRange a) { return m.div(a[0], a[1]); });
  patterns.add<ElementwiseLowering<ScaleOp>>(ctx, [](ScaleOp op, ScalarMath &m, ValueRange a) {
    return m.mul(a[0], m.constant(a[0], op.getFactor().convertToDouble()));
  });
  patterns.add<ElementwiseLowering<BroadcastOp>>(
      ctx, [](BroadcastOp, ScalarMath &, ValueRange a) { return a[0]; });
  // The generic widens a bf16 element and rounds to a bf16 result.
  patterns.add<ElementwiseLowering<ConvertOp>>(
      ctx, [](ConvertOp, ScalarMath &, ValueRange a) { return a[0]; });

  patterns.add<ElementwiseLowering<ReluOp>>(ctx, [](ReluOp, ScalarMath &m, ValueRange a) {
    return m.max(a[0], m.constant(a[0], 0.0));
  });
  patterns.add<ElementwiseLowering<GeluOp>>(
      ctx, [](GeluOp, ScalarMath &m, ValueRange a) { return gelu(m, a[0]); });
  patterns.add<ElementwiseLowering<SiluOp>>(ctx, [](SiluOp, ScalarMath &m, ValueRange a) {
    return m.mul(a[0], sigmoid(m, a[0]));
  });
  patterns.add<ElementwiseLowering<TanhOp>>(
      ctx, [](TanhOp, ScalarMath &m, ValueRange a) { return m.tanh(a[0]); });
  patterns.add<ElementwiseLowering<ExpOp>>(
      ctx, [](ExpOp, ScalarMath &m, ValueRange a) { return m.exp(a[0]); });

  // Activation gradients: operands are (x, dy).
  patterns.add<ElementwiseLowering<ReluGradOp>>(ctx, [](ReluGradOp, ScalarMath &m,
                                                         ValueRange a) {
    Value zero = m.constant(a[1], 0.0);
    return m.select(m.greater(a[0], zero), a[1], zero);
  });
  patterns.add<ElementwiseLowering<GeluGradOp>>(
      ctx, [](GeluGradOp, ScalarMath &m, ValueRange a) {
        return m.mul(a[1], geluDerivative(m, a[0]));
      });
  // d/dx x s(x) = s (1 + x (1 - s)).
  patterns.add<ElementwiseLowering<SiluGradOp>>(ctx, [](SiluGradOp, ScalarMath &m,
                                                         ValueRange a) {
    Value s = sigmoid(m, a[0]), one = m.constant(a[0], 1.0);
    return m.mul(a[1], m.mul(s, m.add(one, m.mul(a[0], m.sub(one, s)))));
  });

  patterns.add<ElementwiseLowering<CausalMaskOp>>(
      ctx, [](CausalMaskOp op, ScalarMath &m, ValueRange a) {
        return m.select(isFuturePosition(m, rankOf(op.getInput())),
                        m.constant(a[0], -INFINITY), a[0]);
      });
  patterns.add<ElementwiseLowering<CausalMaskGradOp>>(
      ctx, [](CausalMaskGradOp op, ScalarMath &m, ValueRange a) {
        return m.select(isFuturePosition(m, rankOf(op.getGrad())), m.constant(a[0], 0.0),
                        a[0]);
      });

  // min(1, max_norm / (sqrt(sum of squares) + 1e-6)), as torch's clip_grad_norm_.
  patterns.add<ElementwiseLowering<ClipCoefficientOp>>(
      ctx, [](ClipCoefficientOp op, ScalarMath &m, ValueRange a) {
        Value norm = m.add(m.sqrt(a[0]), m.constant(a[0], 1e-6));
        Value coefficient =
            m.div(m.constant(a[0], op.getMaxNorm().convertToDouble()), norm);
        return m.min(coefficient, m.constant(a[0], 1.0));
      });
}
