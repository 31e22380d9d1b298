//===- SlicePatterns.cpp - fsdp.slice and its gradient to linalg ----------===//
//
// Both are written as generics, like the embedding's gather, rather than as
// tensor.extract_slice/insert_slice: every target's kernel generation and the
// buffer planner already handle generics, and a slice's strided view would
// reach consumers (GEMM calls) that expect contiguous operands.
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilders.h"

#include "fsdp/Conversion/FSDPToLinalg.h"
#include "fsdp/IR/FSDPOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::fsdp;

namespace {

Value constantIndex(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value);
}

// out[..., i, ...] = in[..., i + offset, ...], read as a gather: a shifted
// indexing map is refused when the offset is 0 and the sizes differ.
struct SliceLowering : OpRewritePattern<SliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SliceOp op, PatternRewriter &rewriter) const override {
    RankedTensorType type = op.getType();
    int64_t dim = op.getDim(), offset = op.getOffset();
    Value input = op.getInput();
    Value result = buildParallel(
        rewriter, op.getLoc(), type, ValueRange{}, {}, [&](OpBuilder &b, Location loc, ValueRange) {
          SmallVector<Value> at = iterationIndices(b, loc, type.getRank());
          at[dim] = arith::AddIOp::create(b, loc, at[dim], constantIndex(b, loc, offset));
          return tensor::ExtractOp::create(b, loc, input, at).getResult();
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

// out[..., i, ...] = grad[..., i - offset, ...] inside the slice's range, 0
// outside it: each element written once, no zero fill first.
struct SliceGradLowering : OpRewritePattern<SliceGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SliceGradOp op, PatternRewriter &rewriter) const override {
    RankedTensorType type = op.getType();
    Value grad = op.getGrad();
    int64_t dim = op.getDim(), offset = op.getOffset();
    int64_t size = op.getGrad().getType().getDimSize(dim);
    Value result = buildParallel(
        rewriter, op.getLoc(), type, ValueRange{}, {}, [&](OpBuilder &b, Location loc, ValueRange) {
          auto index = [&](int64_t value) { return constantIndex(b, loc, value); };
          SmallVector<Value> at = iterationIndices(b, loc, type.getRank());
          Value shifted = arith::SubIOp::create(b, loc, at[dim], index(offset));
          // i - offset in [0, size), compared unsigned: a negative difference
          // wraps to a large one.
          Value inside =
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, shifted, index(size));
          at[dim] = arith::SelectOp::create(b, loc, inside, shifted, index(0));
          Value value = gatherElement(b, loc, grad, at);
          Value zero = constantFloat(b, loc, value.getType(), 0.0);
          return arith::SelectOp::create(b, loc, inside, value, zero).getResult();
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void mlir::fsdp::populateFSDPSliceToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<SliceLowering, SliceGradLowering>(patterns.getContext());
}
