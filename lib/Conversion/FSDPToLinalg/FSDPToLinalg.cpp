//===- FSDPToLinalg.cpp - convert-fsdp-to-linalg --------------------------===//

#include "fsdp/Conversion/Passes.h"
#include "fsdp/IR/FSDPOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::fsdp {
#define GEN_PASS_DEF_CONVERTFSDPTOLINALGPASS
#include "fsdp/Conversion/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;
using namespace mlir::fsdp;

void mlir::fsdp::populateFSDPToLinalgPatterns(RewritePatternSet &patterns,
                                              bool sortScatterPositions) {
  populateFSDPAttentionToLinalgPatterns(patterns);
  populateFSDPMatmulToLinalgPatterns(patterns);
  populateFSDPElementwiseToLinalgPatterns(patterns);
  populateFSDPReductionToLinalgPatterns(patterns);
  populateFSDPRotaryToLinalgPatterns(patterns);
  populateFSDPLayoutToLinalgPatterns(patterns);
  populateFSDPEmbeddingGradToLinalgPatterns(patterns, sortScatterPositions);
  populateFSDPSliceToLinalgPatterns(patterns);
}

namespace {
struct ConvertFSDPToLinalgPass
    : public fsdp::impl::ConvertFSDPToLinalgPassBase<ConvertFSDPToLinalgPass> {
  using Base::Base;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    ConversionTarget target(*ctx);
    target.addLegalDialect<arith::ArithDialect, linalg::LinalgDialect, math::MathDialect,
                           scf::SCFDialect, tensor::TensorDialect>();
    target.addIllegalDialect<FSDPDialect>();
    // Parameters and their updates are state: convert-fsdp-to-runtime's job.
    target.addLegalOp<ParamOp, UseOp, UpdateOp>();
    RewritePatternSet patterns(ctx);
    populateFSDPToLinalgPatterns(patterns, sortScatterPositions);
    if (failed(applyPartialConversion(getOperation(), target, std::move(patterns))))
      return signalPassFailure();
    getOperation()->walk([](linalg::GenericOp table) { table->removeAttr(kRotaryTableAttr); });
  }
};
} // namespace
