//===- FuseElementwise.cpp - fsdp-fuse-elementwise ------------------------===//

#include "fsdp/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPFUSEELEMENTWISEPASS
#include "fsdp/Transforms/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;

namespace {
struct FSDPFuseElementwisePass
    : public fsdp::impl::FSDPFuseElementwisePassBase<FSDPFuseElementwisePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    // Only generic producers: named ops (products) stay named for BLAS.
    linalg::populateElementwiseOpsFusionPatterns(patterns, [](OpOperand *operand) {
      Operation *producer = operand->get().getDefiningOp();
      return producer && isa<linalg::GenericOp>(producer) &&
             isa<linalg::GenericOp>(operand->getOwner());
    });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
