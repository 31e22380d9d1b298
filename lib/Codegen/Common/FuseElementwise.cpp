//===- FuseElementwise.cpp - fsdp-fuse-elementwise ------------------------===//

#include "fsdp/Codegen/Common/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
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
  // What the producer reads: its inputs, and an init only if its body reads
  // it (an elementwise op's tensor.empty is no value kept alive).
  auto generic = cast<linalg::GenericOp>(producer);
  for (OpOperand &operand : generic->getOpOperands()) {
    if (!generic.payloadUsesValueFromOperand(&operand))
      continue;
    Value input = operand.get();
    bool readLater = llvm::any_of(input.getUsers(), [&](Operation *user) {
      return user != producer && user->getBlock() == consumer->getBlock() &&
             !order.isBefore(user, consumer);
    });
    if (!readLater)
      return false;
  }
  return true;
}

/// Whether fusing `producer` into one of several consumers, each computing
/// it again, costs only arithmetic: its body reads no other tensor and no
/// iteration index (a gather, such as the embedding's rows, would read them
/// again in each consumer, and a reduction it joined could no longer be
/// split: fsdp-cuda-split-reductions).
bool isRecomputable(Operation *producer) {
  WalkResult found = producer->walk([](Operation *op) {
    return isa<tensor::ExtractOp, linalg::IndexOp>(op) ? WalkResult::interrupt()
                                                       : WalkResult::advance();
  });
  return !found.wasInterrupted();
}

/// Scalar ops stay apart. The chain that sums one value per unit (the squared
/// gradient norms, for clipping) would otherwise fuse into one op with an
/// operand per unit: a kernel whose size grows with the model's depth. Apart,
/// the adds are identical and share one kernel; a scalar gains nothing from
/// fusion anyway.
bool hasLoops(Operation *producer) {
  return cast<linalg::GenericOp>(producer).getNumLoops() > 0;
}

/// Whether `op` is an elementwise generic with loops, on tensors.
bool isElementwise(linalg::GenericOp op) {
  return op.getNumLoops() > 0 && op.getNumParallelLoops() == op.getNumLoops() &&
         op.hasPureTensorSemantics();
}

/// Whether `op` reads a result of `producer`, in its operands or its body.
bool reads(Operation *op, Operation *producer) {
  return llvm::any_of(producer->getUsers(), [&](Operation *user) { return op->isAncestor(user); });
}

/// Whether the elementwise generics `a` and `b` (b later in the block) can
/// be one: the same iteration space, an input both read through the same
/// map, and `b` reading nothing `a` computes.
bool areSiblings(linalg::GenericOp a, linalg::GenericOp b) {
  if (!isElementwise(b) || a.getStaticLoopRanges() != b.getStaticLoopRanges() ||
      ShapedType::isDynamicShape(a.getStaticLoopRanges()) || reads(b, a))
    return false;
  return llvm::any_of(a.getDpsInputOperands(), [&](OpOperand *x) {
    return llvm::any_of(b.getDpsInputOperands(), [&](OpOperand *y) {
      return x->get() == y->get() && a.getMatchingIndexingMap(x) == b.getMatchingIndexingMap(y);
    });
  });
}

/// One generic computing `a`'s results and then `b`'s, at `b`'s place,
/// reading each input they share (the same value through the same map) once.
linalg::GenericOp fuseSiblings(RewriterBase &rewriter, linalg::GenericOp a, linalg::GenericOp b) {
  SmallVector<Value> inputs, inits;
  SmallVector<AffineMap> inputMaps, initMaps;
  // Each op's block argument's index among the fused op's.
  SmallVector<SmallVector<unsigned>> argOf(2);
  for (auto [k, op] : llvm::enumerate(std::array{a, b}))
    for (OpOperand *input : op.getDpsInputOperands()) {
      AffineMap map = op.getMatchingIndexingMap(input);
      auto same = llvm::find_if(llvm::seq<unsigned>(0, inputs.size()), [&](unsigned i) {
        return inputs[i] == input->get() && inputMaps[i] == map;
      });
      if (same != llvm::seq<unsigned>(0, inputs.size()).end()) {
        argOf[k].push_back(*same);
        continue;
      }
      argOf[k].push_back(inputs.size());
      inputs.push_back(input->get());
      inputMaps.push_back(map);
    }
  for (auto [k, op] : llvm::enumerate(std::array{a, b}))
    for (OpOperand &init : op.getDpsInitsMutable()) {
      argOf[k].push_back(inputs.size() + inits.size());
      inits.push_back(init.get());
      initMaps.push_back(op.getMatchingIndexingMap(&init));
    }
  SmallVector<AffineMap> maps(inputMaps);
  maps.append(initMaps);
  SmallVector<Type> results(a->getResultTypes());
  llvm::append_range(results, b->getResultTypes());
  rewriter.setInsertionPoint(b);
  auto fused = linalg::GenericOp::create(
      rewriter, b.getLoc(), results, inputs, inits, maps, a.getIteratorTypesArray(),
      [&](OpBuilder &nested, Location loc, ValueRange args) {
        SmallVector<Value> yielded;
        for (auto [k, op] : llvm::enumerate(std::array{a, b})) {
          IRMapping mapping;
          for (auto [arg, index] : llvm::zip(op.getBody()->getArguments(), argOf[k]))
            mapping.map(arg, args[index]);
          for (Operation &bodyOp : op.getBody()->without_terminator())
            nested.clone(bodyOp, mapping);
          for (Value value : op.getBody()->getTerminator()->getOperands())
            yielded.push_back(mapping.lookupOrDefault(value));
        }
        linalg::YieldOp::create(nested, loc, yielded);
      });
  unsigned resultsOfA = a->getNumResults();
  rewriter.replaceOp(a, fused.getResults().take_front(resultsOfA));
  rewriter.replaceOp(b, fused.getResults().drop_front(resultsOfA));
  return fused;
}

/// How far after an op its sibling may be, in ops: the fused op runs at the
/// sibling's place, so the first op's inputs live until there.
constexpr int kMaxSiblingDistance = 32;

/// The first sibling of `a` after it (areSiblings), at most
/// kMaxSiblingDistance ops on, that no runtime call separates from it, nor an
/// op that reads `a`'s results (the fused op takes the sibling's place).
linalg::GenericOp nextSibling(linalg::GenericOp a) {
  int distance = 0;
  for (Operation *next = a->getNextNode();
       next && !isa<func::CallOp>(next) && distance++ < kMaxSiblingDistance;
       next = next->getNextNode()) {
    auto b = dyn_cast<linalg::GenericOp>(next);
    if (b && areSiblings(a, b))
      return b;
    if (reads(next, a))
      return {};
  }
  return {};
}

/// Fuses each elementwise generic of `block` with its next sibling, as long
/// as it has one (SwiGLU's backward: the gate's and the up projection's
/// gradients read the incoming gradient and the gate once).
void fuseSiblingsIn(Block &block) {
  IRRewriter rewriter(block.getParentOp()->getContext());
  for (Operation *op = block.empty() ? nullptr : &block.front(); op;) {
    auto a = dyn_cast<linalg::GenericOp>(op);
    linalg::GenericOp b = a && isElementwise(a) ? nextSibling(a) : linalg::GenericOp();
    if (!b) {
      op = op->getNextNode();
      continue;
    }
    // The ops between them may have siblings of their own: look again from
    // where `a` was.
    Operation *before = a->getPrevNode();
    fuseSiblings(rewriter, a, b);
    op = before ? before->getNextNode() : &block.front();
  }
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
             (producer->hasOneUse() || isRecomputable(producer)) &&
             keepsInputLives(producer, operand->getOwner(), calls, order);
    });
    // The canonicalizer that follows simplifies regions; here it would
    // sweep the whole step after every round of fusion.
    GreedyRewriteConfig config;
    config.setListener(&order).setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      return signalPassFailure();
    getOperation()->walk([](Block *block) { fuseSiblingsIn(*block); });
  }
};
} // namespace
