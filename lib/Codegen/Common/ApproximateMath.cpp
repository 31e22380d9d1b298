//===- ApproximateMath.cpp - fsdp-approximate-math ------------------------===//
//
// f32 exp, log and tanh as upstream MLIR's polynomial approximations, so that
// the loops computing softmax, cross-entropy, GELU and SiLU vectorise instead
// of calling libm once per element.
//
//===----------------------------------------------------------------------===//

#include "fsdp/Codegen/Common/Passes.h"

#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPAPPROXIMATEMATHPASS
#include "fsdp/Codegen/Common/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;

namespace {

/// The functions the model's ops use. The others upstream approximates
/// (sin, atan, erf, ...) do not occur in a step and stay as they are.
bool isApproximated(StringRef name) {
  name.consume_front("math.");
  return name == "exp" || name == "log" || name == "tanh";
}

struct FSDPApproximateMathPass
    : public fsdp::impl::FSDPApproximateMathPassBase<FSDPApproximateMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns, isApproximated);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
