//===- TestLaunchSummary.cpp - what the step launches (test only) ---------===//
//
// Counts the kernels fsdp-cuda-form-kernels made of the step, once they are
// gpu.launch ops with constant sizes: how many the host program holds, how
// many a step launches (a launch inside a host loop counts once per
// iteration), and which of them would run on a single thread of a single
// block, each named by its location in the model file.
//
//===----------------------------------------------------------------------===//

#include "TestPasses.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Pass/Pass.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace {

/// How many times the host runs `op` per call of its function: the trip
/// counts of the loops around it.
std::optional<int64_t> timesPerCall(Operation *op) {
  int64_t times = 1;
  for (auto loop = op->getParentOfType<scf::ForOp>(); loop;
       loop = loop->getParentOfType<scf::ForOp>()) {
    std::optional<int64_t> lower = getConstantIntValue(loop.getLowerBound());
    std::optional<int64_t> upper = getConstantIntValue(loop.getUpperBound());
    std::optional<int64_t> step = getConstantIntValue(loop.getStep());
    if (!lower || !upper || !step || *step <= 0)
      return std::nullopt;
    times *= std::max<int64_t>(llvm::divideCeil(*upper - *lower, *step), 0);
  }
  return times;
}

/// Threads of a launch, or nothing when a size is not a constant.
std::optional<int64_t> threads(gpu::LaunchOp launch) {
  gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
  gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
  int64_t total = 1;
  for (Value size : {grid.x, grid.y, grid.z, block.x, block.y, block.z}) {
    std::optional<int64_t> value = getConstantIntValue(size);
    if (!value)
      return std::nullopt;
    total *= *value;
  }
  return total;
}

struct TestLaunchSummaryPass : public PassWrapper<TestLaunchSummaryPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestLaunchSummaryPass)

  StringRef getArgument() const final { return "test-fsdp-launch-summary"; }
  StringRef getDescription() const final {
    return "Test only: prints, for each function, the gpu.launch ops it holds, the launches "
           "per call, and those of a single thread";
  }

  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      int64_t kernels = 0, perCall = 0;
      SmallVector<gpu::LaunchOp> single;
      bool unknown = false;
      func.walk([&](gpu::LaunchOp launch) {
        ++kernels;
        std::optional<int64_t> times = timesPerCall(launch);
        std::optional<int64_t> count = threads(launch);
        if (!times || !count)
          unknown = true;
        perCall += times.value_or(1);
        if (count == 1)
          single.push_back(launch);
      });
      if (kernels == 0)
        continue;
      llvm::outs() << func.getSymName() << ": " << kernels << " kernels, ";
      if (unknown)
        llvm::outs() << "launches per call unknown (a size or a trip count is not constant)";
      else
        llvm::outs() << perCall << " launches per call";
      llvm::outs() << ", " << single.size() << " on a single thread\n";
      for (gpu::LaunchOp launch : single)
        llvm::outs() << "  single thread: " << launch.getLoc() << "\n";
    }
  }
};

} // namespace

std::unique_ptr<Pass> mlir::fsdp::test::createTestLaunchSummaryPass() {
  return std::make_unique<TestLaunchSummaryPass>();
}

void mlir::fsdp::test::registerTestLaunchSummaryPass() {
  PassRegistration<TestLaunchSummaryPass>();
}
