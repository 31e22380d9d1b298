//===- KernelCost.cpp - the predicted time of one GPU kernel --------------===//

#include "Analysis/KernelCost.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/TypeUtilities.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::fsdp;

OpArithmetic mlir::fsdp::arithmeticOf(Operation *op) {
  if (isa<arith::ConstantOp, arith::IndexCastOp, arith::IndexCastUIOp>(op))
    return {};
  OpArithmetic counted;
  if (!isa<arith::ArithDialect, math::MathDialect>(op->getDialect()))
    return counted;
  if (isa<arith::DivFOp, math::SqrtOp, math::RsqrtOp>(op))
    counted.divides = 1;
  else if (isa<math::ExpOp, math::Exp2Op, math::LogOp, math::TanhOp, math::PowFOp, math::ErfOp,
               math::CosOp, math::SinOp>(op))
    counted.arithmetic = 20;
  else
    counted.arithmetic = 1;
  // A FLOP makes a float; conversions and selects only move one.
  bool makesFloat = llvm::any_of(
      op->getResultTypes(), [](Type type) { return isa<FloatType>(getElementTypeOrSelf(type)); });
  if (makesFloat && !isa<arith::ExtFOp, arith::TruncFOp, arith::SIToFPOp, arith::UIToFPOp,
                         arith::BitcastOp, arith::SelectOp>(op))
    counted.floatOps = 1;
  return counted;
}

Operation *mlir::fsdp::singleCombiner(linalg::LinalgOp op) {
  if (op.getNumDpsInits() != 1 || !isa<FloatType>(getElementTypeOrSelf(op.getDpsInits()[0])))
    return nullptr;
  // The output's only use is the op that makes the yielded value: nothing
  // else the body computes depends on the running value.
  Block *body = op.getBlock();
  BlockArgument out = body->getArguments().back();
  Operation *combiner = body->getTerminator()->getOperand(0).getDefiningOp();
  if (!combiner || combiner->getBlock() != body || !out.hasOneUse() ||
      *out.user_begin() != combiner ||
      !isa<arith::AddFOp, arith::MulFOp, arith::MaximumFOp, arith::MinimumFOp, arith::MaxNumFOp,
           arith::MinNumFOp>(combiner))
    return nullptr;
  return combiner;
}

bool mlir::fsdp::reducesCooperatively(linalg::LinalgOp op) {
  if (op.getNumReductionLoops() == 0 || !singleCombiner(op))
    return false;
  if (op.getNumParallelLoops() == 0)
    return true;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  auto iterators = op.getIteratorTypesArray();
  int64_t elements = 1;
  unsigned lastReduction = 0;
  for (auto [index, iterator] : llvm::enumerate(iterators))
    if (iterator == utils::IteratorType::reduction) {
      elements *= ranges[index];
      lastReduction = index;
    }
  // The reduced elements lie along the innermost dimension of the first
  // input, which a block's threads then read side by side.
  AffineMap map = op.getMatchingIndexingMap(op.getDpsInputOperand(0));
  if (map.getNumResults() == 0)
    return false;
  auto last = dyn_cast<AffineDimExpr>(map.getResult(map.getNumResults() - 1));
  return elements >= kCooperativeMinElements && last && last.getPosition() == lastReduction;
}

KernelWork mlir::fsdp::launchShapeOf(linalg::LinalgOp op, int64_t blockSize) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  auto iterators = op.getIteratorTypesArray();
  int64_t outputs = 1, reduced = 1;
  for (auto [range, iterator] : llvm::zip(ranges, iterators))
    (iterator == utils::IteratorType::parallel ? outputs : reduced) *= std::max<int64_t>(range, 1);
  KernelWork shape;
  if (reducesCooperatively(op)) {
    shape.blocks = outputs;
    shape.threadsPerBlock = std::min(blockSize, reduced);
    shape.serialTrips = llvm::divideCeil(reduced, shape.threadsPerBlock) * bodyLoopTrips(op);
    return shape;
  }
  shape.threadsPerBlock = std::min(blockSize, outputs);
  shape.blocks = llvm::divideCeil(outputs, shape.threadsPerBlock);
  shape.serialTrips = reduced * bodyLoopTrips(op);
  return shape;
}

std::optional<int64_t> mlir::fsdp::largestValueOf(Value bound) {
  if (std::optional<int64_t> constant = getConstantIntValue(bound))
    return constant;
  Operation *min = bound.getDefiningOp();
  // fsdp-cuda-narrow-kernel-indices computes a kernel's indices in i32.
  if (isa_and_nonnull<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp>(min))
    return largestValueOf(min->getOperand(0));
  if (!isa_and_nonnull<arith::MinSIOp, arith::MinUIOp>(min))
    return std::nullopt;
  std::optional<int64_t> lhs = largestValueOf(min->getOperand(0)),
                         rhs = largestValueOf(min->getOperand(1));
  if (lhs && rhs)
    return std::min(*lhs, *rhs);
  return lhs ? lhs : rhs;
}

int64_t mlir::fsdp::loopTrips(scf::ForOp loop, bool longest) {
  std::optional<int64_t> lower = getConstantIntValue(loop.getLowerBound());
  std::optional<int64_t> upper =
      longest ? largestValueOf(loop.getUpperBound()) : getConstantIntValue(loop.getUpperBound());
  std::optional<int64_t> step = getConstantIntValue(loop.getStep());
  if (!upper || !step || *step <= 0)
    return 1;
  return std::max<int64_t>(0, llvm::divideCeil(*upper - lower.value_or(0), *step));
}

int64_t mlir::fsdp::bodyLoopTrips(Operation *op) {
  int64_t longest = 1;
  op->walk([&](scf::ForOp loop) {
    int64_t chain = 1;
    for (auto around = loop; around && op->isAncestor(around);
         around = around->getParentOfType<scf::ForOp>())
      chain *= std::max<int64_t>(1, loopTrips(around, /*longest=*/true));
    longest = std::max(longest, chain);
  });
  return longest;
}

KernelTime mlir::fsdp::predictKernelTime(const KernelWork &work, const DeviceProfile &profile) {
  KernelTime time;
  double bytes = work.bytesRead + work.bytesWritten;
  time.roofline = std::max(bytes / profile.memoryBandwidthAt(bytes),
                           work.arithmetic / profile.vectorFlops +
                               work.divides / profile.vectorDivides);
  // Blocks fewer than the multiprocessors leave the others idle: the memory
  // system is fed by the ones that run.
  double occupied = 1;
  if (profile.multiprocessors > 0)
    occupied = std::min(1.0, static_cast<double>(work.blocks) /
                                 static_cast<double>(profile.multiprocessors));
  double chain = static_cast<double>(work.serialTrips) *
                 (work.memoryCarried ? profile.memoryCarriedIterationSeconds
                                     : profile.serialIterationSeconds);
  time.predicted = profile.opOverhead + std::max(time.roofline / occupied, chain);
  return time;
}
