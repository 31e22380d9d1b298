//===- LayoutPatterns.cpp - reshape, transpose, embedding to linalg -------===//

#include "LinalgBuilders.h"

#include "fsdp/Conversion/FSDPToLinalg.h"
#include "fsdp/IR/FSDPOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::fsdp;

namespace {

/// Any shape to any shape of the same element count, row-major: through the
/// flat vector, which bufferizes to views, never copies.
Value reshapeTo(OpBuilder &b, Location loc, Value input, RankedTensorType target) {
  if (input.getType() == target)
    return input;
  RankedTensorType from = tensorType(input);
  if (target.getRank() == 0 || from.getRank() == 0) {
    // Rank 0 <-> all-ones shapes need no grouping.
    if (target.getRank() == 0)
      return tensor::CollapseShapeOp::create(b, loc, target, input,
                                             ArrayRef<ReassociationIndices>{});
    return tensor::ExpandShapeOp::create(b, loc, target, input,
                                         ArrayRef<ReassociationIndices>{});
  }
  Value flat = collapseLeading(b, loc, input, 0);
  return expandLeading(b, loc, flat, target, 0);
}

struct ReshapeLowering : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op, PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, reshapeTo(rewriter, op.getLoc(), op.getInput(), op.getType()));
    return success();
  }
};

struct TransposeLowering : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op, PatternRewriter &rewriter) const override {
    RankedTensorType type = op.getType();
    Value init = tensor::EmptyOp::create(rewriter, op.getLoc(), type.getShape(),
                                         type.getElementType());
    auto transpose = linalg::TransposeOp::create(rewriter, op.getLoc(), op.getInput(), init,
                                                 op.getPermutation());
    rewriter.replaceOp(op, transpose.getResult());
    return success();
  }
};

// out[i..., d] = table[ids[i...], d]
struct EmbeddingLowering : OpRewritePattern<EmbeddingOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(EmbeddingOp op, PatternRewriter &rewriter) const override {
    RankedTensorType type = op.getType();
    int64_t rank = type.getRank();
    AffineMap idsMap = droppedDimsMap(rewriter.getContext(), rank, {rank - 1});
    Value table = op.getTable();
    Value result = buildParallel(
        rewriter, op.getLoc(), type, op.getIndices(), idsMap,
        [&](OpBuilder &b, Location loc, ValueRange args) {
          ScalarMath m(b, loc);
          Value column = linalg::IndexOp::create(b, loc, rank - 1);
          return tensor::ExtractOp::create(b, loc, table,
                                           ValueRange{m.toIndex(args[0]), column});
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

// table_grad[ids[n], d] += grad[n, d], a scatter-add written as loops.
struct EmbeddingGradLowering : OpRewritePattern<EmbeddingGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(EmbeddingGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType tableType = op.getType();
    RankedTensorType idsType = op.getIndices().getType();
    int64_t positions = idsType.getNumElements(), features = tableType.getDimSize(1);
    Value ids = reshapeTo(rewriter, loc, op.getIndices(),
                          RankedTensorType::get({positions}, idsType.getElementType()));
    Value grad = reshapeTo(
        rewriter, loc, op.getGrad(),
        RankedTensorType::get({positions, features}, tableType.getElementType()));
    // Rows of one index add up in f32; the table gradient is rounded once.
    RankedTensorType sumType = computeTensorType(tableType);
    Value zeros = buildFilled(rewriter, loc, sumType, 0.0);
    auto index = [&](int64_t value) {
      return arith::ConstantIndexOp::create(rewriter, loc, value).getResult();
    };
    Value zero = index(0), one = index(1);
    auto outer = scf::ForOp::create(
        rewriter, loc, zero, index(positions), one, ValueRange{zeros},
        [&](OpBuilder &b, Location l, Value n, ValueRange acc) {
          Value id = tensor::ExtractOp::create(b, l, ids, n);
          Value row = arith::IndexCastOp::create(b, l, b.getIndexType(), id);
          auto inner = scf::ForOp::create(
              b, l, zero, index(features), one, acc,
              [&](OpBuilder &ib, Location il, Value d, ValueRange table) {
                Value g = tensor::ExtractOp::create(ib, il, grad, ValueRange{n, d});
                if (g.getType() != sumType.getElementType())
                  g = arith::ExtFOp::create(ib, il, sumType.getElementType(), g);
                Value old = tensor::ExtractOp::create(ib, il, table[0], ValueRange{row, d});
                Value sum = arith::AddFOp::create(ib, il, old, g);
                Value updated =
                    tensor::InsertOp::create(ib, il, sum, table[0], ValueRange{row, d});
                scf::YieldOp::create(ib, il, updated);
              });
          scf::YieldOp::create(b, l, inner.getResults());
        });
    rewriter.replaceOp(op, castTo(rewriter, loc, outer.getResult(0), tableType));
    return success();
  }
};

} // namespace

void mlir::fsdp::populateFSDPLayoutToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<ReshapeLowering, TransposeLowering, EmbeddingLowering,
               EmbeddingGradLowering>(patterns.getContext());
}
