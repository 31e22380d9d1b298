//===- FormKernels.cpp - fsdp-cuda-form-kernels: one loop nest per GPU kernel --===//
//
// The upstream GPU mapping turns a two-level scf.parallel nest into a launch:
// the outer loop's iterations become blocks, the inner one's threads. This
// pass gives every piece of the step's device work exactly that shape, so
// each linalg op (or copy) becomes one kernel with
// enough threads, in program order.
//
//===----------------------------------------------------------------------===//

#include "Analysis/ArenaAccesses.h"
#include "Utils/StepFunction.h"
#include "fsdp/Codegen/CUDA/Passes.h"
#include "fsdp/IR/BufferKinds.h"

#include "FormKernels.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <numeric>

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPFORMKERNELSPASS
#include "fsdp/Codegen/CUDA/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;
using namespace mlir::fsdp;

void mlir::fsdp::collectAccesses(Operation *op, SetVector<Value> &loaded,
                                 SetVector<Value> &stored) {
  op->walk([&](Operation *nested) {
    forEachMemRefAccess(nested,
                        [&](Value memref, bool write) { (write ? stored : loaded).insert(memref); });
  });
}

bool mlir::fsdp::overlap(const std::optional<ArenaAccess> &a, const std::optional<ArenaAccess> &b) {
  return !a || !b || (a->begin < b->end && b->begin < a->end);
}

bool mlir::fsdp::onlyPureOpsBetween(Operation *first, Operation *second) {
  for (Operation *op = first->getNextNode(); op && op != second; op = op->getNextNode())
    if (!isMemoryEffectFree(op))
      return false;
  return true;
}

namespace {

/// Whether a top-level op of the step reads or writes buffers itself (a
/// runtime call only passes addresses on).
bool isDeviceWork(Operation *op) {
  // Runtime calls (offload's update among them), and what the host reads.
  if (isa<func::CallOp>(op) || op->hasAttr(kOnHostAttr))
    return false;
  WalkResult found = op->walk([](Operation *nested) {
    if (isa<linalg::LinalgOp, memref::CopyOp, memref::LoadOp, memref::StoreOp>(nested))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return found.wasInterrupted();
}

/// Whether `op` is a loop the host runs, launching the kernels of its body
/// each iteration: one that calls the runtime (the attention's key blocks,
/// whose products are library calls). Any other loop is device work.
bool isHostLoop(Operation *op) {
  auto loop = dyn_cast<scf::ForOp>(op);
  return loop && loop->walk([](func::CallOp) { return WalkResult::interrupt(); }).wasInterrupted();
}

/// Puts `op` alone in `scf.parallel (%i) = (0) to (1)`: one thread runs it.
FailureOr<scf::ParallelOp> wrapInSingleIteration(RewriterBase &rewriter, Operation *op) {
  if (!op->use_empty())
    return op->emitOpError("runs on the device but its results are used by the host");
  rewriter.setInsertionPoint(op);
  Location loc = op->getLoc();
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
  auto loop =
      scf::ParallelOp::create(rewriter, loc, ValueRange{zero}, ValueRange{one}, ValueRange{one});
  rewriter.moveOpBefore(op, loop.getBody()->getTerminator());
  return loop;
}

/// The same op with its parallel loops first, so that they form one
/// scf.parallel and the reductions run inside each thread.
FailureOr<linalg::LinalgOp> parallelDimsFirst(RewriterBase &rewriter, linalg::LinalgOp op) {
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  SmallVector<unsigned> order;
  for (unsigned i = 0; i < iterators.size(); ++i)
    if (iterators[i] == utils::IteratorType::parallel)
      order.push_back(i);
  for (unsigned i = 0; i < iterators.size(); ++i)
    if (iterators[i] != utils::IteratorType::parallel)
      order.push_back(i);
  SmallVector<unsigned> identity(iterators.size());
  std::iota(identity.begin(), identity.end(), 0);
  if (order == identity)
    return op;
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!generic) {
    rewriter.setInsertionPoint(op);
    FailureOr<linalg::GenericOp> generalized = linalg::generalizeNamedOp(rewriter, op);
    if (failed(generalized))
      return op.emitOpError("cannot be generalized to reorder its loops for the GPU");
    generic = *generalized;
  }
  FailureOr<linalg::GenericOp> interchanged =
      linalg::interchangeGenericOp(rewriter, generic, order);
  if (failed(interchanged))
    return generic.emitOpError("cannot put its parallel loops first for the GPU");
  return cast<linalg::LinalgOp>(interchanged->getOperation());
}

/// How the kernels' threads are shaped: the pass's options.
struct ThreadShape {
  int64_t blockSize;
  int64_t vectorBytes;
};

/// One linalg op as a top-level scf.parallel nest, returned; `inits` are the
/// values its outputs start from (fills folded into a reduction), or null;
/// `prologue`, an op a block reduction runs first (isRowPrologue).
FailureOr<scf::ParallelOp> lowerToLoopNest(RewriterBase &rewriter, linalg::LinalgOp op,
                                           ArrayRef<Value> inits, ThreadShape shape,
                                           linalg::LinalgOp prologue = nullptr) {
  if (!op.hasPureBufferSemantics())
    return op.emitOpError("expected buffers: the GPU kernels are formed after bufferization");
  FailureOr<linalg::LinalgOp> ordered = parallelDimsFirst(rewriter, op);
  if (failed(ordered))
    return failure();
  op = *ordered;
  if (op.getNumReductionLoops() > 0)
    return lowerReduction(rewriter, op, inits, shape.blockSize, shape.vectorBytes, prologue);
  rewriter.setInsertionPoint(op);
  if (op.getNumParallelLoops() == 0) {
    FailureOr<scf::ParallelOp> single = wrapInSingleIteration(rewriter, op);
    if (failed(single))
      return failure();
    rewriter.setInsertionPoint(op);
    if (failed(linalg::linalgOpToLoops(rewriter, op)))
      return op.emitOpError("cannot be lowered to loops");
    rewriter.eraseOp(op);
    return single;
  }
  FailureOr<linalg::LinalgLoops> loops = linalg::linalgOpToParallelLoops(rewriter, op);
  if (failed(loops) || loops->empty())
    return op.emitOpError("cannot be lowered to parallel loops");
  rewriter.eraseOp(op);
  auto nest = cast<scf::ParallelOp>(loops->front());
  widenThreads(rewriter, nest, shape.vectorBytes);
  return nest;
}

/// Splits a one-dimensional loop into blocks of `blockSize` threads (fewer
/// when the loop is shorter); the last block is guarded when it is partial.
LogicalResult tileIntoBlocks(scf::ParallelOp loop, int64_t blockSize) {
  std::optional<int64_t> lower = getConstantIntValue(loop.getLowerBound()[0]);
  std::optional<int64_t> upper = getConstantIntValue(loop.getUpperBound()[0]);
  std::optional<int64_t> step = getConstantIntValue(loop.getStep()[0]);
  if (!lower || !upper || !step || *step <= 0)
    return loop.emitOpError("expected static bounds: the step's buffers have static shapes");
  int64_t trips = std::max<int64_t>(llvm::divideCeil(*upper - *lower, *step), 1);
  int64_t threads = std::min(blockSize, trips);
  scf::tileParallelLoop(loop, {threads}, /*noMinMaxBounds=*/trips % threads != 0);
  return success();
}

struct FSDPFormKernelsPass : public fsdp::impl::FSDPFormKernelsPassBase<FSDPFormKernelsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto step = requireStep(module, StepLevel::Runtime, getArgument());
    if (!step)
      return signalPassFailure();
    if (blockSize < 1 || blockSize > 1024) {
      module.emitError() << "fsdp-cuda-form-kernels: block-size " << static_cast<int64_t>(blockSize)
                         << " is not in [1, 1024], the threads a CUDA block can have";
      return signalPassFailure();
    }
    if (vectorBytes < 1 || !llvm::isPowerOf2_64(vectorBytes)) {
      module.emitError() << "fsdp-cuda-form-kernels: vector-bytes " << static_cast<int64_t>(vectorBytes)
                         << " is not a power of two";
      return signalPassFailure();
    }
    // The step's block and the bodies of its loops (the attention's key
    // blocks), which stay on the host and launch their kernels each iteration.
    SmallVector<Block *> blocks = {&step.getBody().front()};
    for (size_t i = 0; i < blocks.size(); ++i)
      for (auto loop : blocks[i]->getOps<scf::ForOp>())
        if (isHostLoop(loop))
          blocks.push_back(loop.getBody());
    IRRewriter rewriter(&getContext());
    ArenaAccesses arena(step);
    for (Block *body : blocks)
      if (failed(formKernels(rewriter, *body, arena)))
        return signalPassFailure();
    // Folds the collapsed bounds (products of the extents) to constants.
    if (failed(applyPatternsGreedily(step, RewritePatternSet(&getContext()))))
      return signalPassFailure();
    for (Block *body : blocks) {
      fuseSiblingReductions(rewriter, *body, arena);
      fuseIndependentNests(rewriter, *body, arena);
    }
    for (Block *body : blocks) {
      SmallVector<scf::ParallelOp> nests(body->getOps<scf::ParallelOp>());
      for (scf::ParallelOp nest : nests) {
        // A block reduction is shaped already.
        if (nest->removeAttr(kCooperativeNestAttr))
          continue;
        if (failed(tileIntoBlocks(nest, blockSize)))
          return signalPassFailure();
      }
    }
  }

  ThreadShape threadShape() const { return {blockSize, vectorBytes}; }

  /// The device work of `body` in order, copies made linalg ops like any
  /// other; `inits` gets the values the reductions start from (the fills
  /// that only start them).
  static SmallVector<Operation *> deviceWorkOf(IRRewriter &rewriter, Block &body,
                                               DenseMap<Operation *, SmallVector<Value>> &inits) {
    for (auto copy : llvm::make_early_inc_range(body.getOps<memref::CopyOp>())) {
      rewriter.setInsertionPoint(copy);
      linalg::CopyOp::create(rewriter, copy.getLoc(), copy.getSource(), copy.getTarget());
      rewriter.eraseOp(copy);
    }
    for (auto op : llvm::to_vector(body.getOps<linalg::LinalgOp>()))
      if (op.getNumReductionLoops() > 0)
        inits[op] = takeFusableFills(op);
    SmallVector<Operation *> work;
    for (Operation &op : body.without_terminator())
      if (!isHostLoop(&op) && isDeviceWork(&op))
        work.push_back(&op);
    return work;
  }

  /// Each nest of `body` of several dimensions but a block reduction's as
  /// one dimension, which the GPU mapping then tiles into blocks of threads.
  static void collapseNests(IRRewriter &rewriter, Block &body) {
    SmallVector<scf::ParallelOp> nests(body.getOps<scf::ParallelOp>());
    for (scf::ParallelOp nest : nests)
      if (nest.getNumLoops() > 1 && !nest->hasAttr(kCooperativeNestAttr)) {
        std::vector<unsigned> all(nest.getNumLoops());
        std::iota(all.begin(), all.end(), 0);
        collapseParallelLoops(rewriter, nest, {all});
      }
  }

  /// Every piece of device work of `body` as one scf.parallel of one
  /// dimension; a loop of the host's is not device work itself.
  LogicalResult formKernels(IRRewriter &rewriter, Block &body, const ArenaAccesses &arena) {
    DenseMap<Operation *, SmallVector<Value>> inits;
    SmallVector<Operation *> work = deviceWorkOf(rewriter, body, inits);
    // The nest of the last full reduction, while only scalar work follows it.
    scf::ParallelOp fullReduction;
    // The nest of the block reduction just lowered.
    scf::ParallelOp rowReduction;
    // An elementwise op the next block reduction runs first.
    linalg::LinalgOp prologue;
    // A scalar op no full reduction took, computed by the kernels that follow
    // it (`consumer`: the last of them) rather than by a thread of its own.
    linalg::LinalgOp scalar;
    Operation *consumer = nullptr;
    auto settleScalar = [&]() -> LogicalResult {
      if (!scalar)
        return success();
      linalg::LinalgOp op = std::exchange(scalar, nullptr);
      if (consumer != op) {
        rewriter.eraseOp(op);
        return success();
      }
      return lowerToLoopNest(rewriter, op, SmallVector<Value>(op.getNumDpsInits()), threadShape());
    };
    for (auto [index, op] : llvm::enumerate(work)) {
      auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
      if (linalgOp && linalgOp.getNumLoops() == 0) {
        if (fullReduction && onlyPureOpsBetween(fullReduction, op)) {
          appendToFullReduction(rewriter, fullReduction, linalgOp);
          continue;
        }
        if (failed(settleScalar()))
          return failure();
        if (isCostlyScalar(linalgOp)) {
          fullReduction = nullptr;
          if (failed(lowerToLoopNest(rewriter, linalgOp,
                                     SmallVector<Value>(linalgOp.getNumDpsInits()),
                                     threadShape())))
            return failure();
          continue;
        }
        scalar = linalgOp;
        consumer = op;
        continue;
      }
      fullReduction = nullptr;
      // A row-wise op right after a block reduction runs in its kernel.
      if (linalgOp && rowReduction && onlyPureOpsBetween(rowReduction, op) &&
          succeeded(fuseRowEpilogue(rewriter, rowReduction, linalgOp, arena, vectorBytes))) {
        rowReduction = nullptr;
        continue;
      }
      rowReduction = nullptr;
      // An elementwise op whose results the block reduction right after it
      // reads row by row runs in that kernel (a residual add before a norm).
      auto next = index + 1 < work.size() ? dyn_cast<linalg::LinalgOp>(work[index + 1])
                                          : linalg::LinalgOp();
      if (linalgOp && next && !scalar && onlyPureOpsBetween(op, next) &&
          isRowPrologue(linalgOp, next, &arena)) {
        prologue = linalgOp;
        continue;
      }
      FailureOr<scf::ParallelOp> nest = scf::ParallelOp();
      bool reduces = linalgOp && linalgOp.getNumReductionLoops() > 0;
      if (linalgOp) {
        SmallVector<Value> starts = inits.lookup(op);
        starts.resize(linalgOp.getNumDpsInits());
        nest = lowerToLoopNest(rewriter, linalgOp, starts, threadShape(),
                               std::exchange(prologue, nullptr));
      } else if (failed(wrapInSingleIteration(rewriter, op))) {
        return failure();
      }
      if (failed(nest))
        return failure();
      if (*nest && isFullReductionNest(*nest))
        fullReduction = *nest;
      if (*nest && reduces)
        rowReduction = *nest;
      if (!scalar)
        continue;
      bool takes = *nest && onlyPureOpsBetween(consumer, *nest) &&
                   succeeded(prependScalar(rewriter, *nest, scalar,
                                           /*store=*/consumer == scalar, arena));
      if (takes)
        consumer = *nest;
      else if (failed(settleScalar()))
        return failure();
    }
    if (failed(settleScalar()))
      return failure();
    collapseNests(rewriter, body);
    return success();
  }
};

} // namespace
