//===- LayoutPatterns.cpp - reshape, transpose, embedding to linalg -------===//

#include "LinalgBuilders.h"

#include "fsdp/Conversion/FSDPToLinalg.h"
#include "fsdp/IR/FSDPOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::fsdp;

namespace {

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

// A tensor rank's indices into its block of rows: index - first inside it,
// size (a row past the block) outside.
struct BlockIndicesLowering : OpRewritePattern<BlockIndicesOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BlockIndicesOp op, PatternRewriter &rewriter) const override {
    RankedTensorType type = op.getType();
    int64_t rank = type.getRank(), size = op.getSize();
    Value result = buildParallel(
        rewriter, op.getLoc(), type, {op.getIndices(), op.getFirst()},
        {rewriter.getMultiDimIdentityMap(rank), singleElementMap(rewriter.getContext(), rank)},
        [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
          ScalarMath m(b, loc);
          Value local = arith::SubIOp::create(b, loc, m.toI64(args[0]), m.toI64(args[1]));
          Value inside = arith::AndIOp::create(
              b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, local, m.i64(0)),
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, local, m.i64(size)));
          Value index = arith::SelectOp::create(b, loc, inside, local, m.i64(size));
          Type element = type.getElementType();
          return element.isInteger(64)
                     ? index
                     : arith::TruncIOp::create(b, loc, element, index).getResult();
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void mlir::fsdp::populateFSDPLayoutToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<ReshapeLowering, TransposeLowering, EmbeddingLowering, BlockIndicesLowering>(
      patterns.getContext());
}
