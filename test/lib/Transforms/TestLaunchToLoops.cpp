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
//===----------------------------------------------------------------------===//

#include "TestPasses.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace {

/// Ops that only mean something when a block's threads run together.
bool needsConcurrentThreads(Operation *op) {
  return isa<gpu::BarrierOp, gpu::ShuffleOp, gpu::AllReduceOp, gpu::SubgroupReduceOp>(op);
}

LogicalResult lowerLaunch(gpu::LaunchOp launch) {
  if (!launch.getAsyncDependencies().empty() || launch.getAsyncToken() ||
      launch.getDynamicSharedMemorySize() || launch.hasClusterSize())
    return launch.emitOpError("only synchronous launches without shared memory or clusters "
                              "run as loops");
  if (!launch.getBody().hasOneBlock())
    return launch.emitOpError("expected a kernel body of one block");
  WalkResult concurrent = launch.getBody().walk([](Operation *op) {
    return needsConcurrentThreads(op) ? WalkResult::interrupt() : WalkResult::advance();
  });
  if (concurrent.wasInterrupted())
    return launch.emitOpError("synchronises its threads: it cannot run as sequential loops");

  OpBuilder b(launch);
  Location loc = launch.getLoc();
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
  gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
  // Blocks outermost, x fastest, as a GPU numbers its threads.
  SmallVector<Value> bounds = {grid.z, grid.y, grid.x, block.z, block.y, block.x};
  SmallVector<Value> ids;
  for (Value bound : bounds) {
    auto loop = scf::ForOp::create(b, loc, zero, bound, one);
    ids.push_back(loop.getInductionVar());
    b.setInsertionPoint(loop.getBody()->getTerminator());
  }

  IRMapping mapping;
  gpu::KernelDim3 blockIds = launch.getBlockIds(), threadIds = launch.getThreadIds();
  gpu::KernelDim3 gridArgs = launch.getGridSize(), blockArgs = launch.getBlockSize();
  mapping.map(blockIds.z, ids[0]);
  mapping.map(blockIds.y, ids[1]);
  mapping.map(blockIds.x, ids[2]);
  mapping.map(threadIds.z, ids[3]);
  mapping.map(threadIds.y, ids[4]);
  mapping.map(threadIds.x, ids[5]);
  SmallVector<Value> sizeArgs = {gridArgs.x,  gridArgs.y,  gridArgs.z,
                                 blockArgs.x, blockArgs.y, blockArgs.z};
  SmallVector<Value> sizes = {grid.x, grid.y, grid.z, block.x, block.y, block.z};
  for (auto [arg, size] : llvm::zip(sizeArgs, sizes))
    mapping.map(arg, size);
  for (Operation &op : launch.getBody().front().without_terminator())
    b.clone(op, mapping);
  launch.erase();
  return success();
}

struct TestLaunchToLoopsPass
    : public PassWrapper<TestLaunchToLoopsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestLaunchToLoopsPass)

  StringRef getArgument() const final { return "test-fsdp-launch-to-loops"; }
  StringRef getDescription() const final {
    return "Test only: runs each gpu.launch without barriers as loops over block and "
           "thread ids on the CPU";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, scf::SCFDialect>();
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
