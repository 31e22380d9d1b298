//===- FuseElementwise.cpp - fsdp-fuse-elementwise ------------------------===//

#include "fsdp/Codegen/Common/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPFUSEELEMENTWISEPASS
#include "fsdp/Codegen/Common/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;

namespace {

/// The order of the ops of one block, kept current while fusion rewrites it.
/// Operation::isBeforeInBlock renumbers the whole block whenever an inserted
/// op has no room left between its neighbours' numbers, which fusion (each
/// fused op inserted before its consumer, chain after chain) hits over and
/// over: quadratic in the step's length (2.4 s of the 80-block Llama's
/// compile). Here an inserted op takes the midpoint of its neighbours'
/// positions, and the block is renumbered only when doubles run out of room
/// (or an op turns up that was inserted without notice). Ops of other blocks
/// are ordered by MLIR's numbering.
class BlockOrder : public RewriterBase::Listener {
public:
  /// Keeps the order of `block`, if any.
  explicit BlockOrder(Block *block) : block(block) { renumber(); }

  /// Whether `a` is before `b`, both in one block.
  bool isBefore(Operation *a, Operation *b) const {
    if (a->getBlock() != block)
      return a->isBeforeInBlock(b);
    return positionOf(a) < positionOf(b);
  }

  void notifyOperationInserted(Operation *op, OpBuilder::InsertPoint) override {
    if (op->getBlock() != block)
      return;
    Operation *prev = op->getPrevNode(), *next = op->getNextNode();
    double low = prev ? positionOf(prev) : (next ? positionOf(next) - 2 : 0);
    double high = next ? positionOf(next) : low + 2;
    double middle = low + (high - low) / 2;
    if (middle <= low || middle >= high)
      return renumber();
    position[op] = middle;
  }
  void notifyOperationErased(Operation *op) override { position.erase(op); }

private:
  double positionOf(Operation *op) const {
    auto it = position.find(op);
    if (it != position.end())
      return it->second;
    renumber();
    return position.lookup(op);
  }
  void renumber() const {
    position.clear();
    double next = 0;
    if (block)
      for (Operation &op : *block)
        position[&op] = next++;
  }

  Block *block;
  mutable llvm::DenseMap<Operation *, double> position;
};

/// Fusing moves the producer's computation to the consumer, which then reads
/// the producer's inputs. That must not keep an input alive longer than it
/// already is: a parameter gathered for the forward pass must not be read
/// again in backward through a fused recomputation, nor a micro-batch's
/// gradient kept until the last micro-batch's is added to their sum. An input
/// is free to read at the consumer when something reads it there or later;
/// else only when no collective (a runtime call, of `calls` in block order)
/// runs in between, i.e. the producer and the consumer are parts of the same
/// stretch of compute.
bool keepsInputLives(Operation *producer, Operation *consumer, ArrayRef<Operation *> calls,
                     const BlockOrder &order) {
  if (producer->getBlock() != consumer->getBlock())
    return false;
  // The first call after the producer (fusion neither adds nor removes calls).
  auto next = llvm::partition_point(calls, [&](Operation *call) {
    return call->getBlock() != producer->getBlock() || order.isBefore(call, producer);
  });
  bool collectiveBetween = next != calls.end() && order.isBefore(*next, consumer);
  if (producer->hasOneUse() && !collectiveBetween)
    return true;
  for (Value input : producer->getOperands()) {
    bool readLater = llvm::any_of(input.getUsers(), [&](Operation *user) {
      return user != producer && user->getBlock() == consumer->getBlock() &&
             !order.isBefore(user, consumer);
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
    // The step's collectives, in order (one block: the step's).
    SmallVector<Operation *> calls;
    getOperation()->walk([&](func::CallOp call) {
      if (calls.empty() || calls.front()->getBlock() == call->getBlock())
        calls.push_back(call);
    });
    BlockOrder order(calls.empty() ? nullptr : calls.front()->getBlock());
    RewritePatternSet patterns(&getContext());
    // Only generic producers: named ops (products) stay named for BLAS.
    linalg::populateElementwiseOpsFusionPatterns(patterns, [&](OpOperand *operand) {
      Operation *producer = operand->get().getDefiningOp();
      return producer && isa<linalg::GenericOp>(producer) &&
             isa<linalg::GenericOp>(operand->getOwner()) && hasLoops(producer) &&
             keepsInputLives(producer, operand->getOwner(), calls, order);
    });
    // The canonicalizer that follows simplifies regions; here it would
    // sweep the whole step after every round of fusion.
    GreedyRewriteConfig config;
    config.setListener(&order).setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      signalPassFailure();
  }
};
} // namespace
