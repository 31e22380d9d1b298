//===- NarrowKernelIndices.cpp - fsdp-cuda-narrow-kernel-indices: 32-bit indices ===//
//
// convert-gpu-to-nvvm makes `index` as wide as the GPU module's data layout
// says, 64 bits by default: every thread's index arithmetic (its element
// from block and thread ids, the divisions by sizes that split it into
// coordinates, the linear offset of each access) is then 64-bit, which takes
// two 32-bit registers a value and, for a multiplication, several
// instructions. The kernels' sizes are far below 2^31 elements (a
// Llama-2-70B unit's gradient shard, the largest, is 53.5 million), so where
// every index value of every kernel of a GPU module provably fits 32 bits
// this pass gives the module a 32-bit index (`#dlti.dl_spec<index = 32>`).
//
// Provably: upstream's integer range analysis bounds each value, from the
// block and grid sizes outlining put on each kernel and, for a parameter of
// type index (a host loop's index, the attention's key block), the range of
// what every launch passes, by the same analysis of the host code. The
// analysis takes arithmetic to be exact, so a value is only known to fit
// where everything it is computed from fits; an unsigned operation (remui,
// index_castui, a ult comparison) must also see no negative operand, which
// as unsigned is 2^32 - 1 or less at 32 bits and 2^64 - 1 or less at 64
// (-1 remui 7 is 3 or 1). Accesses (and views) are in bounds, so
// their linear offsets fit where the largest offset of each memref type
// does. Anything else, a value the analysis cannot bound (one loaded as
// i64, a loop-carried index), keeps the module at 64 bits.
//
// Memory addresses stay 64-bit: a kernel gets its buffers as bare pointers
// the host offset into the arena (tens of GiB for a 70B model), and adds
// each access's element offset to its pointer sign-extended. (A memref
// descriptor would not do: its offset, sizes and strides are index values,
// which the host passes at 64 bits.) Parameters of type index become i32 on
// both sides, so that the launch passes what the kernel reads.
//
//===----------------------------------------------------------------------===//

#include "KernelLaunches.h"
#include "fsdp/Codegen/CUDA/Passes.h"

#include "mlir/Analysis/DataFlow/IntegerRangeAnalysis.h"
#include "mlir/Analysis/DataFlow/Utils.h"
#include "mlir/Analysis/DataFlowFramework.h"
#include "mlir/Dialect/DLTI/DLTI.h"

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPNARROWKERNELINDICESPASS
#include "fsdp/Codegen/CUDA/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;
using namespace mlir::fsdp;
using dataflow::IntegerValueRangeLattice;

namespace {

constexpr int64_t kMinIndex = std::numeric_limits<int32_t>::min();
constexpr int64_t kMaxIndex = std::numeric_limits<int32_t>::max();

/// Upstream's integer range analysis, but a kernel's parameters of type
/// index start from what the launches pass rather than from anything.
class KernelRangeAnalysis : public dataflow::IntegerRangeAnalysis {
public:
  KernelRangeAnalysis(DataFlowSolver &solver, const DenseMap<Value, ConstantIntRanges> &parameters)
      : IntegerRangeAnalysis(solver), parameters(parameters) {}

  void setToEntryState(IntegerValueRangeLattice *lattice) override {
    auto known = parameters.find(lattice->getAnchor());
    if (known == parameters.end())
      return IntegerRangeAnalysis::setToEntryState(lattice);
    propagateIfChanged(lattice, lattice->join(IntegerValueRange(known->second)));
  }

private:
  const DenseMap<Value, ConstantIntRanges> &parameters;
};

/// The range `solver` found for `value`, if any.
std::optional<ConstantIntRanges> rangeOf(DataFlowSolver &solver, Value value) {
  auto *lattice = solver.lookupState<IntegerValueRangeLattice>(value);
  if (!lattice || lattice->getValue().isUninitialized())
    return std::nullopt;
  return lattice->getValue().getValue();
}

bool fits(const std::optional<ConstantIntRanges> &range, int64_t min = kMinIndex) {
  return range && range->smin().getSExtValue() >= min && range->smax().getSExtValue() <= kMaxIndex;
}

/// Whether every element offset of a memref of `type` fits: its largest
/// (the static part, with non-negative strides; a dynamic offset is a value
/// of its own, checked as one, and an in-bounds view of a memref that fits).
bool fitsType(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  if (!memref)
    return true;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (!memref.hasStaticShape() || failed(memref.getStridesAndOffset(strides, offset)))
    return false;
  __int128 last = ShapedType::isDynamic(offset) ? 0 : offset;
  for (auto [size, stride] : llvm::zip_equal(memref.getShape(), strides)) {
    if (ShapedType::isDynamic(stride) || stride < 0)
      return false;
    last += static_cast<__int128>(std::max<int64_t>(size - 1, 0)) * stride;
  }
  return last <= kMaxIndex;
}

/// Whether `op` treats its index operands as unsigned.
bool isUnsigned(Operation *op) {
  if (isa<arith::DivUIOp, arith::RemUIOp, arith::CeilDivUIOp, arith::ShRUIOp, arith::MaxUIOp,
          arith::MinUIOp, arith::IndexCastUIOp>(op))
    return true;
  auto cmp = dyn_cast<arith::CmpIOp>(op);
  return cmp && (cmp.getPredicate() == arith::CmpIPredicate::ult ||
                 cmp.getPredicate() == arith::CmpIPredicate::ule ||
                 cmp.getPredicate() == arith::CmpIPredicate::ugt ||
                 cmp.getPredicate() == arith::CmpIPredicate::uge);
}

/// Whether every index value of `kernels` fits 32 bits, by `solver`.
bool fitsIn32Bits(gpu::GPUModuleOp kernels, DataFlowSolver &solver) {
  auto valueFits = [&](Value value) {
    if (!fitsType(value.getType()))
      return false;
    return !value.getType().isIndex() || value.use_empty() || fits(rangeOf(solver, value));
  };
  WalkResult result = kernels.walk([&](Operation *op) {
    for (Region &region : op->getRegions())
      for (Block &block : region)
        if (!llvm::all_of(block.getArguments(), valueFits))
          return WalkResult::interrupt();
    if (!llvm::all_of(op->getResults(), valueFits))
      return WalkResult::interrupt();
    for (Value operand : op->getOperands()) {
      if (!fitsType(operand.getType()))
        return WalkResult::interrupt();
      if (operand.getType().isIndex() && isUnsigned(op) && !fits(rangeOf(solver, operand), 0))
        return WalkResult::interrupt();
    }
    // The loop's last increment (iv + step, once the loop is branches).
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      std::optional<ConstantIntRanges> upper = rangeOf(solver, loop.getUpperBound());
      std::optional<ConstantIntRanges> step = rangeOf(solver, loop.getStep());
      if (loop.getInductionVar().getType().isIndex() &&
          (!upper || !step ||
           upper->smax().getSExtValue() + step->smax().getSExtValue() > kMaxIndex))
        return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return !result.wasInterrupted();
}

/// Makes the parameters of type index of `kernel` i32 on both sides.
void narrowIndexParameters(gpu::GPUFuncOp kernel, ArrayRef<gpu::LaunchFuncOp> launches) {
  OpBuilder b(kernel.getContext());
  Type i32 = b.getI32Type();
  SmallVector<Type> inputs(kernel.getArgumentTypes());
  Block &entry = kernel.getBody().front();
  for (unsigned i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].isIndex())
      continue;
    inputs[i] = i32;
    BlockArgument parameter = entry.getArgument(i);
    parameter.setType(i32);
    b.setInsertionPointToStart(&entry);
    auto index = arith::IndexCastOp::create(b, kernel.getLoc(), b.getIndexType(), parameter);
    parameter.replaceAllUsesExcept(index, index);
    for (gpu::LaunchFuncOp launch : launches) {
      unsigned position = launch.getKernelOperands().getBeginOperandIndex() + i;
      b.setInsertionPoint(launch);
      launch->setOperand(position, arith::IndexCastOp::create(b, launch.getLoc(), i32,
                                                              launch->getOperand(position)));
    }
  }
  kernel.setFunctionType(b.getFunctionType(inputs, kernel.getResultTypes()));
}

struct FSDPNarrowKernelIndicesPass
    : public fsdp::impl::FSDPNarrowKernelIndicesPassBase<FSDPNarrowKernelIndicesPass> {
  void getDependentDialects(DialectRegistry &registry) const override {
    FSDPNarrowKernelIndicesPassBase::getDependentDialects(registry);
    registry.insert<DLTIDialect>();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::MapVector<gpu::GPUFuncOp, SmallVector<gpu::LaunchFuncOp>> launches =
        launchesByKernel(module);

    // The host's index values, for what the launches pass.
    DataFlowSolver host;
    dataflow::loadBaselineAnalyses(host);
    host.load<dataflow::IntegerRangeAnalysis>();
    if (failed(host.initializeAndRun(module)))
      return signalPassFailure();

    for (auto kernels : module.getOps<gpu::GPUModuleOp>()) {
      if (kernels->hasAttr(DLTIDialect::kDataLayoutAttrName))
        continue;
      // Each index parameter: what every launch passes (anything if none).
      DenseMap<Value, ConstantIntRanges> parameters;
      for (auto kernel : kernels.getOps<gpu::GPUFuncOp>()) {
        for (BlockArgument parameter : kernel.getArguments()) {
          if (!parameter.getType().isIndex())
            continue;
          std::optional<ConstantIntRanges> range;
          for (gpu::LaunchFuncOp launch : launches.lookup(kernel)) {
            std::optional<ConstantIntRanges> passed =
                rangeOf(host, launch.getKernelOperands()[parameter.getArgNumber()]);
            if (!passed) {
              range = std::nullopt;
              break;
            }
            range = range ? range->rangeUnion(*passed) : *passed;
          }
          if (range)
            parameters.try_emplace(parameter, *range);
        }
      }
      DataFlowSolver solver;
      dataflow::loadBaselineAnalyses(solver);
      solver.load<KernelRangeAnalysis>(parameters);
      if (failed(solver.initializeAndRun(kernels)))
        return signalPassFailure();
      if (!fitsIn32Bits(kernels, solver))
        continue;

      for (auto kernel : kernels.getOps<gpu::GPUFuncOp>())
        narrowIndexParameters(kernel, launches.lookup(kernel));
      MLIRContext *ctx = &getContext();
      DataLayoutEntryInterface index = DataLayoutEntryAttr::get(
          IndexType::get(ctx), IntegerAttr::get(IntegerType::get(ctx, 64), 32));
      kernels->setAttr(DLTIDialect::kDataLayoutAttrName, DataLayoutSpecAttr::get(ctx, index));
    }
  }
};

} // namespace
