//===- FSDPTensorParallelOps.cpp - sequence blocks: verifiers -------------===//

#include "fsdp/IR/FSDPOps.h"

#include "mlir/IR/BuiltinOps.h"

using namespace mlir;
using namespace mlir::fsdp;

/// The tensor ranks of the plan of `op`'s module, if it has one.
static std::optional<int64_t> tensorRanksOf(Operation *op) {
  auto module = op->getParentOfType<ModuleOp>();
  auto plan = module ? module->getAttrOfType<PlanAttr>(FSDPDialect::getPlanAttrName()) : nullptr;
  if (!plan)
    return std::nullopt;
  return plan.getTensorParallel();
}

/// `block` is one tensor rank's block of `whole` along `dim`: the same shape
/// and element type but for `dim`, which the plan's tensor ranks divide (or,
/// with `shared`, which a number of blocks dividing the ranks divides).
static LogicalResult verifySequenceBlock(Operation *op, RankedTensorType block,
                                         RankedTensorType whole, uint64_t dim,
                                         bool shared = false) {
  if (block.getRank() != whole.getRank() || block.getElementType() != whole.getElementType())
    return op->emitOpError("the block ")
           << block << " and the whole " << whole << " differ in rank or element type";
  if (dim >= static_cast<uint64_t>(whole.getRank()))
    return op->emitOpError("dim ") << dim << " is not a dimension of " << whole;
  for (int64_t d = 0; d < whole.getRank(); ++d)
    if (d != static_cast<int64_t>(dim) && block.getDimSize(d) != whole.getDimSize(d))
      return op->emitOpError("the block ")
             << block << " and the whole " << whole << " differ in dimension " << d
             << ", which is not split";
  int64_t size = whole.getDimSize(dim), part = block.getDimSize(dim);
  std::optional<int64_t> ranks = tensorRanksOf(op);
  bool wholeBlocks = part >= 1 && size % part == 0;
  if (shared && wholeBlocks && (!ranks || *ranks % (size / part) == 0))
    return success();
  if (!wholeBlocks || (ranks && (size % *ranks != 0 || part != size / *ranks)))
    return op->emitOpError("dimension ")
           << dim << " of the block " << block << " must be that of the whole " << whole
           << " divided by the tensor ranks"
           << (ranks ? " (" + std::to_string(*ranks) + ")" : std::string())
           << (shared ? ", or by a number of blocks that divides them" : "");
  return success();
}

LogicalResult TensorAllGatherOp::verify() {
  return verifySequenceBlock(*this, getInput().getType(), getType(), getDim());
}

LogicalResult TensorReduceScatterOp::verify() {
  return verifySequenceBlock(*this, getType(), getInput().getType(), getDim());
}

LogicalResult TensorChunkOp::verify() {
  return verifySequenceBlock(*this, getType(), getInput().getType(), getDim(), /*shared=*/true);
}

LogicalResult TensorUnchunkOp::verify() {
  return verifySequenceBlock(*this, getInput().getType(), getType(), getDim(), /*shared=*/true);
}
