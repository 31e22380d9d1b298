//===- TestLaunchToLoops.cpp - run GPU launches as CPU loops (test only) --===//
//
// There is no GPU on the build machines. A kernel whose threads never
// synchronise computes the same thing whatever order its threads run in, so
// its body can be checked on the CPU: each gpu.launch becomes loops over
// block and thread ids in which the body runs once per thread. The trainer
// built this way uses the very kernels (block and thread mapping, bounds
// guards of partial blocks, index arithmetic) the CUDA target compiles, and
// is compared with the CPU target's trainer (test/e2e/cuda-kernels-on-cpu.test).
//
// A block reduction (gpu.all_reduce at the top level of the body, which all
// the block's threads reach) is where they meet: the body is cut there. The
// threads run up to it, each leaving its value in an array; the values are
// combined in the order the GPU's lowering combines them (pairs of lanes
// within each warp of 32, then the warps' results likewise: upstream's
// AllReduceLowering, whose shuffles are butterflies); then the threads run
// on from it with the result. A value computed before the cut and used
// after it is computed again, which only side-effect-free ops may be.
//
//===----------------------------------------------------------------------===//

#include "TestPasses.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace {

/// Ops that only mean something when a block's threads run together.
bool needsConcurrentThreads(Operation *op) {
  return isa<gpu::BarrierOp, gpu::ShuffleOp, gpu::AllReduceOp, gpu::SubgroupReduceOp>(op);
}

/// `a` combined with `b` as `kind` combines them.
Value combine(OpBuilder &b, Location loc, gpu::AllReduceOperation kind, Value lhs, Value rhs) {
  using Kind = gpu::AllReduceOperation;
  switch (kind) {
  case Kind::ADD:
    return arith::AddFOp::create(b, loc, lhs, rhs);
  case Kind::MUL:
    return arith::MulFOp::create(b, loc, lhs, rhs);
  case Kind::MAXIMUMF:
    return arith::MaximumFOp::create(b, loc, lhs, rhs);
  case Kind::MINIMUMF:
    return arith::MinimumFOp::create(b, loc, lhs, rhs);
  case Kind::MAXNUMF:
    return arith::MaxNumFOp::create(b, loc, lhs, rhs);
  case Kind::MINNUMF:
    return arith::MinNumFOp::create(b, loc, lhs, rhs);
  default:
    return nullptr;
  }
}

/// Combines values[base, base + count) into values[base] as a warp of
/// `count` lanes does with butterfly shuffles: lane l ends with l's value
/// combined with l + s's for s = 1, 2, 4, 8, 16 (when l + s < count), lane
/// 0 with the sum of all, in that shape.
void combineLikeAWarp(OpBuilder &b, Location loc, gpu::AllReduceOperation kind, Value values,
                      Value base, Value count) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  for (int64_t stride = 1; stride < 32; stride *= 2) {
    Value s = arith::ConstantIndexOp::create(b, loc, stride);
    Value twice = arith::ConstantIndexOp::create(b, loc, 2 * stride);
    scf::ForOp::create(
        b, loc, zero, count, twice, ValueRange{},
        [&](OpBuilder &lb, Location l, Value lane, ValueRange) {
          Value partner = arith::AddIOp::create(lb, l, lane, s);
          Value inRange = arith::CmpIOp::create(lb, l, arith::CmpIPredicate::ult, partner, count);
          scf::IfOp::create(lb, l, inRange, [&](OpBuilder &ib, Location il) {
            Value self = arith::AddIOp::create(ib, il, base, lane);
            Value other = arith::AddIOp::create(ib, il, base, partner);
            Value sum = combine(ib, il, kind, memref::LoadOp::create(ib, il, values, self),
                                memref::LoadOp::create(ib, il, values, other));
            memref::StoreOp::create(ib, il, sum, values, self);
            scf::YieldOp::create(ib, il);
          });
          scf::YieldOp::create(lb, l);
        });
  }
}

/// The block-wide result of the `threads` values in `values`, combined as
/// the GPU does: each warp's lanes, then the warps' results.
Value combineLikeABlock(OpBuilder &b, Location loc, gpu::AllReduceOperation kind, Value values,
                        Value threads) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value warp = arith::ConstantIndexOp::create(b, loc, 32);
  Value warps = arith::CeilDivUIOp::create(b, loc, threads, warp);
  // Warp w's result goes to values[w]: a lane of warp 0, whose own result
  // was taken first.
  scf::ForOp::create(
      b, loc, zero, warps, one, ValueRange{}, [&](OpBuilder &lb, Location l, Value w, ValueRange) {
        Value base = arith::MulIOp::create(lb, l, w, warp);
        Value left = arith::SubIOp::create(lb, l, threads, base);
        Value count = arith::MinUIOp::create(lb, l, left, warp);
        combineLikeAWarp(lb, l, kind, values, base, count);
        memref::StoreOp::create(lb, l, memref::LoadOp::create(lb, l, values, base), values, w);
        scf::YieldOp::create(lb, l);
      });
  combineLikeAWarp(b, loc, kind, values, zero, warps);
  return memref::LoadOp::create(b, loc, values, zero);
}

/// Fails, with the launch's diagnostic, on a launch of a form that loops
/// cannot run.
LogicalResult checkLaunchRunsAsLoops(gpu::LaunchOp launch) {
  if (!launch.getAsyncDependencies().empty() || launch.getAsyncToken() ||
      launch.getDynamicSharedMemorySize() || launch.hasClusterSize())
    return launch.emitOpError("only synchronous launches without shared memory or clusters "
                              "run as loops");
  if (!launch.getBody().hasOneBlock())
    return launch.emitOpError("expected a kernel body of one block");
  return success();
}

/// The body, cut at its block reductions: segment i runs up to reduction i,
/// the last segment (`segments` starts with one) to the end of the body.
LogicalResult cutLaunchBodyAtReductions(gpu::LaunchOp launch,
                                        SmallVectorImpl<SmallVector<Operation *>> &segments,
                                        SmallVectorImpl<gpu::AllReduceOp> &reductions) {
  for (Operation &op : launch.getBody().front().without_terminator()) {
    auto reduce = dyn_cast<gpu::AllReduceOp>(op);
    if (reduce) {
      if (!reduce.getUniform() || !reduce.getOp() || !isa<FloatType>(reduce.getType()))
        return reduce.emitOpError("only uniform float reductions of a named kind run as loops");
      reductions.push_back(reduce);
      segments.emplace_back();
      continue;
    }
    WalkResult concurrent = op.walk([](Operation *nested) {
      return needsConcurrentThreads(nested) ? WalkResult::interrupt() : WalkResult::advance();
    });
    if (concurrent.wasInterrupted())
      return launch.emitOpError("synchronises its threads other than by a block reduction at "
                                "the top level: it cannot run as sequential loops");
    segments.back().push_back(&op);
  }
  return success();
}

/// Builds, in a launch's place, the loops that run its body, cut into
/// `segments` at its `reductions`: loops over blocks, in which each segment
/// runs in loops over threads, each reduction's result combined in between.
class LaunchAsLoopsBuilder {
public:
  LaunchAsLoopsBuilder(gpu::LaunchOp launch, ArrayRef<SmallVector<Operation *>> segments,
                       ArrayRef<gpu::AllReduceOp> reductions)
      : launch(launch), segments(segments), reductions(reductions), b(launch), loc(launch.getLoc()),
        block(launch.getBlockSizeOperandValues()) {}

  /// Fails where a value used across a reduction cannot be computed again.
  LogicalResult build() {
    buildBlockLoops();
    for (auto [i, segment] : llvm::enumerate(segments))
      for (Operation *op : segment)
        segmentOf[op] = i;
    for (auto [i, segment] : llvm::enumerate(segments)) {
      b.restoreInsertionPoint(inBlock);
      SmallVector<Value> tids = buildLoopNest({block.z, block.y, block.x});
      gpu::KernelDim3 threadIds = launch.getThreadIds();
      IRMapping mapping = shared;
      mapping.map(threadIds.z, tids[0]);
      mapping.map(threadIds.y, tids[1]);
      mapping.map(threadIds.x, tids[2]);
      if (failed(cloneSegment(i, segment, mapping)))
        return failure();
      if (i == reductions.size())
        break;
      if (failed(buildBlockReduction(i, tids, mapping)))
        return failure();
    }
    return success();
  }

private:
  /// The loops over blocks, after what all blocks share; the launch's block
  /// ids and grid and block sizes mapped to the loops' ids and the sizes.
  void buildBlockLoops() {
    zero = arith::ConstantIndexOp::create(b, loc, 0);
    one = arith::ConstantIndexOp::create(b, loc, 1);
    gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
    threads = b.createOrFold<arith::MulIOp>(
        loc, b.createOrFold<arith::MulIOp>(loc, block.x, block.y), block.z);
    // Each thread's value at a reduction, one array per reduction; of a static
    // size where the block's is (a pointer then carries it into an outlined
    // function).
    std::optional<int64_t> staticThreads = getConstantIntValue(threads);
    int64_t size = staticThreads.value_or(ShapedType::kDynamic);
    ValueRange dynamicSize = staticThreads ? ValueRange() : ValueRange(threads);
    for (gpu::AllReduceOp reduce : reductions)
      values.push_back(
          memref::AllocaOp::create(b, loc, MemRefType::get({size}, reduce.getType()), dynamicSize));
    // Blocks outermost, x fastest, as a GPU numbers its threads.
    SmallVector<Value> blockIdValues = buildLoopNest({grid.z, grid.y, grid.x});
    inBlock = b.saveInsertionPoint();

    gpu::KernelDim3 blockIds = launch.getBlockIds();
    gpu::KernelDim3 gridArgs = launch.getGridSize(), blockArgs = launch.getBlockSize();
    shared.map(blockIds.z, blockIdValues[0]);
    shared.map(blockIds.y, blockIdValues[1]);
    shared.map(blockIds.x, blockIdValues[2]);
    SmallVector<Value> sizeArgs = {gridArgs.x,  gridArgs.y,  gridArgs.z,
                                   blockArgs.x, blockArgs.y, blockArgs.z};
    SmallVector<Value> sizes = {grid.x, grid.y, grid.z, block.x, block.y, block.z};
    for (auto [arg, size] : llvm::zip(sizeArgs, sizes))
      shared.map(arg, size);
  }

  /// Loops from 0 to each of `bounds`, each in the previous one; leaves the
  /// builder in the innermost and returns their ids.
  SmallVector<Value> buildLoopNest(ArrayRef<Value> bounds) {
    SmallVector<Value> ids;
    for (Value bound : bounds) {
      auto loop = scf::ForOp::create(b, loc, zero, bound, one);
      ids.push_back(loop.getInductionVar());
      b.setInsertionPoint(loop.getBody()->getTerminator());
    }
    return ids;
  }

  /// What an earlier segment computed, computed again in segment `segment`.
  LogicalResult recompute(Value value, size_t segment, IRMapping &mapping) {
    Operation *def = value.getDefiningOp();
    if (mapping.contains(value) || !def || !segmentOf.count(def) || segmentOf[def] == segment)
      return success();
    if (!isMemoryEffectFree(def) || def->getNumRegions() != 0)
      return def->emitOpError("is used across a block reduction but has effects: it "
                              "cannot be computed again");
    for (Value operand : def->getOperands())
      if (failed(recompute(operand, segment, mapping)))
        return failure();
    b.clone(*def, mapping);
    return success();
  }

  /// Segment `i`'s ops, each after what it uses of earlier segments.
  LogicalResult cloneSegment(size_t i, ArrayRef<Operation *> segment, IRMapping &mapping) {
    for (Operation *op : segment) {
      WalkResult used = op->walk([&](Operation *nested) {
        for (Value operand : nested->getOperands())
          if (failed(recompute(operand, i, mapping)))
            return WalkResult::interrupt();
        return WalkResult::advance();
      });
      if (used.wasInterrupted())
        return failure();
      b.clone(*op, mapping);
    }
    return success();
  }

  /// Reduction `i`, at the end of its segment's loops over threads (`tids`).
  LogicalResult buildBlockReduction(size_t i, ArrayRef<Value> tids, IRMapping &mapping) {
    // The thread's value, at its linear id; then the block's result.
    gpu::AllReduceOp reduce = reductions[i];
    if (failed(recompute(reduce.getValue(), i, mapping)))
      return failure();
    Value linear = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(
            b, loc,
            arith::AddIOp::create(b, loc, arith::MulIOp::create(b, loc, tids[0], block.y), tids[1]),
            block.x),
        tids[2]);
    memref::StoreOp::create(b, loc, mapping.lookupOrDefault(reduce.getValue()), values[i], linear);
    b.restoreInsertionPoint(inBlock);
    shared.map(reduce.getResult(), combineLikeABlock(b, loc, *reduce.getOp(), values[i], threads));
    inBlock = b.saveInsertionPoint();
    return success();
  }

  gpu::LaunchOp launch;
  ArrayRef<SmallVector<Operation *>> segments;
  ArrayRef<gpu::AllReduceOp> reductions;
  OpBuilder b;
  Location loc;
  gpu::KernelDim3 block;
  Value zero, one, threads;
  /// Each reduction's array of its threads' values.
  SmallVector<Value> values;
  /// Inside the loops over blocks, after what is built there so far.
  OpBuilder::InsertPoint inBlock;
  /// What every thread's copy of the body maps the same way.
  IRMapping shared;
  DenseMap<Operation *, size_t> segmentOf;
};

LogicalResult lowerLaunch(gpu::LaunchOp launch) {
  if (failed(checkLaunchRunsAsLoops(launch)))
    return failure();
  SmallVector<SmallVector<Operation *>> segments(1);
  SmallVector<gpu::AllReduceOp> reductions;
  if (failed(cutLaunchBodyAtReductions(launch, segments, reductions)))
    return failure();
  if (failed(LaunchAsLoopsBuilder(launch, segments, reductions).build()))
    return failure();
  launch.erase();
  return success();
}

struct TestLaunchToLoopsPass : public PassWrapper<TestLaunchToLoopsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestLaunchToLoopsPass)

  StringRef getArgument() const final { return "test-fsdp-launch-to-loops"; }
  StringRef getDescription() const final {
    return "Test only: runs each gpu.launch as loops over block and thread ids on the CPU "
           "(block reductions in the GPU's order)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, memref::MemRefDialect, scf::SCFDialect>();
  }

  void runOnOperation() override {
    SmallVector<gpu::LaunchOp> launches;
    getOperation().walk([&](gpu::LaunchOp launch) { launches.push_back(launch); });
    for (gpu::LaunchOp launch : launches)
      if (failed(lowerLaunch(launch)))
        return signalPassFailure();
    // Nothing is left for the GPU: the module is a CPU program again.
    getOperation()->removeAttr(gpu::GPUDialect::getContainerModuleAttrName());
  }
};

} // namespace

std::unique_ptr<Pass> mlir::fsdp::test::createTestLaunchToLoopsPass() {
  return std::make_unique<TestLaunchToLoopsPass>();
}

void mlir::fsdp::test::registerTestLaunchToLoopsPass() {
  PassRegistration<TestLaunchToLoopsPass>();
}
