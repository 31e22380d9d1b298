//===- MatmulPatterns.cpp - fsdp matrix products to linalg ----------------===//
//
// Products become named linalg.matmul / linalg.batch_matmul ops, transposes
// expressed as indexing maps, so that after bufferization fsdp-lower-gemms
// recognises them and calls BLAS. A bf16 one (bf16 operands and result)
// stands for the product summed in f32 and rounded once, the runtime's
// fsdprt_gemm_bf16: fsdp-lower-gemms lowers every one of them or fails.
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilders.h"

#include "fsdp/Conversion/FSDPToLinalg.h"
#include "fsdp/IR/FSDPOps.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::fsdp;

namespace {

ArrayAttr mapsAttr(OpBuilder &b, ArrayRef<AffineMap> maps) {
  SmallVector<Attribute> attrs;
  for (AffineMap map : maps)
    attrs.push_back(AffineMapAttr::get(map));
  return b.getArrayAttr(attrs);
}

struct MatmulLowering : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MatmulOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType resultType = op.getType();
    bool ta = op.getTransposeLhs(), tb = op.getTransposeRhs();
    if (ta && resultType.getRank() > 2)
      return rewriteAsContraction(op, rewriter);

    // [..., M, K] x [K, N]: merge the leading dimensions into M.
    Value lhs = collapseLeading(rewriter, loc, op.getLhs(), 1);
    ArrayRef<int64_t> shape = resultType.getShape();
    auto matrixType = RankedTensorType::get(
        {resultType.getNumElements() / shape.back(), shape.back()},
        resultType.getElementType());
    MLIRContext *ctx = rewriter.getContext();
    AffineExpr m, n, k;
    bindDims(ctx, m, n, k);
    auto map = [&](AffineExpr a, AffineExpr c) { return AffineMap::get(3, 0, {a, c}, ctx); };
    SmallVector<AffineMap> maps = {ta ? map(k, m) : map(m, k), tb ? map(n, k) : map(k, n),
                                   map(m, n)};
    Value init = buildFilled(rewriter, loc, matrixType, 0.0);
    auto matmul = linalg::MatmulOp::create(
        rewriter, loc, TypeRange{matrixType}, ValueRange{lhs, op.getRhs()}, ValueRange{init},
        {rewriter.getNamedAttr("indexing_maps", mapsAttr(rewriter, maps))});
    rewriter.replaceOp(op, expandLeading(rewriter, loc, matmul.getResult(0), resultType, 1));
    return success();
  }

  /// A transposed lhs with leading dimensions cannot be merged: contract
  /// explicitly over (leading..., m, n, k).
  LogicalResult rewriteAsContraction(MatmulOp op, PatternRewriter &rewriter) const {
    Location loc = op.getLoc();
    RankedTensorType resultType = op.getType();
    MLIRContext *ctx = rewriter.getContext();
    int64_t rank = resultType.getRank(), loops = rank + 1;
    auto dim = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
    SmallVector<AffineExpr> lhs, out;
    for (int64_t i = 0; i < rank - 2; ++i) {
      lhs.push_back(dim(i));
      out.push_back(dim(i));
    }
    AffineExpr m = dim(rank - 2), n = dim(rank - 1), k = dim(rank);
    lhs.append({k, m});
    out.append({m, n});
    SmallVector<AffineExpr> rhs = op.getTransposeRhs() ? SmallVector<AffineExpr>{n, k}
                                                       : SmallVector<AffineExpr>{k, n};
    SmallVector<AffineMap> maps = {AffineMap::get(loops, 0, lhs, ctx),
                                   AffineMap::get(loops, 0, rhs, ctx),
                                   AffineMap::get(loops, 0, out, ctx)};
    SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
    iterators.push_back(utils::IteratorType::reduction);
    // Accumulated in f32 (bf16 operands widened), rounded once.
    RankedTensorType accumulatorType = computeTensorType(resultType);
    Value init = buildFilled(rewriter, loc, accumulatorType, 0.0);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, accumulatorType, ValueRange{op.getLhs(), op.getRhs()}, init, maps,
        iterators, [&](OpBuilder &b, Location l, ValueRange args) {
          ScalarMath math(b, l);
          auto widened = [&](Value v) {
            return v.getType() == accumulatorType.getElementType()
                       ? v
                       : arith::ExtFOp::create(b, l, accumulatorType.getElementType(), v)
                             .getResult();
          };
          linalg::YieldOp::create(
              b, l, math.add(args[2], math.mul(widened(args[0]), widened(args[1]))));
        });
    rewriter.replaceOp(op, castTo(rewriter, loc, generic.getResult(0), resultType));
    return success();
  }
};

struct BatchMatmulLowering : OpRewritePattern<BatchMatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(BatchMatmulOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType resultType = op.getType();
    // [B..., M, K] x [B..., K, N]: merge the batch dimensions into one.
    Value lhs = collapseLeading(rewriter, loc, op.getLhs(), 2);
    Value rhs = collapseLeading(rewriter, loc, op.getRhs(), 2);
    ArrayRef<int64_t> shape = resultType.getShape();
    int64_t m = shape[shape.size() - 2], n = shape.back();
    auto batchedType = RankedTensorType::get(
        {resultType.getNumElements() / (m * n), m, n}, resultType.getElementType());

    MLIRContext *ctx = rewriter.getContext();
    AffineExpr bd, md, nd, kd;
    bindDims(ctx, bd, md, nd, kd);
    auto map = [&](AffineExpr a, AffineExpr c) {
      return AffineMap::get(4, 0, {bd, a, c}, ctx);
    };
    SmallVector<AffineMap> maps = {op.getTransposeLhs() ? map(kd, md) : map(md, kd),
                                   op.getTransposeRhs() ? map(nd, kd) : map(kd, nd),
                                   map(md, nd)};
    Value init = buildFilled(rewriter, loc, batchedType, 0.0);
    auto matmul = linalg::BatchMatmulOp::create(
        rewriter, loc, TypeRange{batchedType}, ValueRange{lhs, rhs}, ValueRange{init},
        {rewriter.getNamedAttr("indexing_maps", mapsAttr(rewriter, maps))});
    rewriter.replaceOp(op, expandLeading(rewriter, loc, matmul.getResult(0), resultType, 2));
    return success();
  }
};

} // namespace

void mlir::fsdp::populateFSDPMatmulToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<MatmulLowering, BatchMatmulLowering>(patterns.getContext());
}
