//===- FuseElementwise.cpp - fsdp-fuse-elementwise ------------------------===//

#include "fsdp/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPFUSEELEMENTWISEPASS
#include "fsdp/Transforms/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;

namespace {

/// Fusing moves the producer's computation to the consumer, which then reads
/// the producer's inputs. That must not keep an input alive longer than it
/// already is: a parameter gathered for the forward pass must not be read
/// again in backward through a fused recomputation, nor a micro-batch's
/// gradient kept until the last micro-batch's is added to their sum. An input
/// is free to read at the consumer when something reads it there or later;
/// else only when no collective (a runtime call, of `calls` in block order)
/// runs in between, i.e. the producer and the consumer are parts of the same
/// stretch of compute.
bool keepsInputLives(Operation *producer, Operation *consumer, ArrayRef<Operation *> calls) {
  if (producer->getBlock() != consumer->getBlock())
    return false;
  // The first call after the producer (fusion neither adds nor removes calls).
  auto next = llvm::partition_point(calls, [&](Operation *call) {
    return call->getBlock() != producer->getBlock() || call->isBeforeInBlock(producer);
  });
  bool collectiveBetween = next != calls.end() && (*next)->isBeforeInBlock(consumer);
  if (producer->hasOneUse() && !collectiveBetween)
    return true;
  for (Value input : producer->getOperands()) {
    bool readLater = llvm::any_of(input.getUsers(), [&](Operation *user) {
      return user != producer && user->getBlock() == consumer->getBlock() &&
             !user->isBeforeInBlock(consumer);
    });
    if (!readLater)
      return false;
  }
  return true;
}

/// Scalar ops stay apart. The chain that sums one value per unit (the squared
/// gradient norms, for clipping) would otherwise fuse into one op with an
/// operand per unit: a kernel whose size grows with the model's depth. Apart,
/// the adds are identical and share one kernel; a scalar gains nothing from
/// fusion anyway.
bool hasLoops(Operation *producer) {
  return cast<linalg::GenericOp>(producer).getNumLoops() > 0;
}

struct FSDPFuseElementwisePass
    : public fsdp::impl::FSDPFuseElementwisePassBase<FSDPFuseElementwisePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    // The step's collectives, in order (one block: the step's).
    SmallVector<Operation *> calls;
    getOperation()->walk([&](func::CallOp call) {
      if (calls.empty() || calls.front()->getBlock() == call->getBlock())
        calls.push_back(call);
    });
    // Only generic producers: named ops (products) stay named for BLAS.
    linalg::populateElementwiseOpsFusionPatterns(patterns, [&](OpOperand *operand) {
      Operation *producer = operand->get().getDefiningOp();
      return producer && isa<linalg::GenericOp>(producer) &&
             isa<linalg::GenericOp>(operand->getOwner()) && hasLoops(producer) &&
             keepsInputLives(producer, operand->getOwner(), calls);
    });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
