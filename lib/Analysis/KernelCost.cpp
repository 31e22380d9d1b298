//===- KernelCost.cpp - the predicted time of one GPU kernel --------------===//

#include "fsdp/Analysis/KernelCost.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
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
