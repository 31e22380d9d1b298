//===- FSDPTensorParallelOps.cpp - blocks and vocabulary: verifiers -------===//

#include "fsdp/IR/FSDPOps.h"

#include "CrossEntropyShapes.h"

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

//===----------------------------------------------------------------------===//
// Vocabulary parallelism
//===----------------------------------------------------------------------===//

/// `rows` is the tensor ranks' blocks of `table`'s rows.
static LogicalResult verifyRowBlocks(Operation *op, RankedTensorType table, int64_t rows) {
  if (table.getRank() != 2)
    return op->emitOpError("table must be [rows, features], got ") << table;
  int64_t block = table.getDimSize(0);
  std::optional<int64_t> ranks = tensorRanksOf(op);
  if (rows % block != 0 || (ranks && rows != block * *ranks))
    return op->emitOpError("the table's ")
           << block << " rows must be the " << rows << " rows divided by the tensor ranks"
           << (ranks ? " (" + std::to_string(*ranks) + ")" : std::string());
  return success();
}

/// The type of an embedding of `table` [rows, D] at `indices` [...]: [..., D].
static RankedTensorType lookupType(RankedTensorType table, RankedTensorType indices) {
  SmallVector<int64_t> shape(indices.getShape());
  shape.push_back(table.getDimSize(1));
  return RankedTensorType::get(shape, table.getElementType());
}

LogicalResult TensorEmbeddingOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                  Adaptor adaptor,
                                                  SmallVectorImpl<Type> &inferred) {
  auto table = llvm::cast<RankedTensorType>(adaptor.getTable().getType());
  if (table.getRank() != 2)
    return emitOptionalError(loc, "'", getOperationName(),
                             "' op table must be [rows, features], got ", table);
  inferred.push_back(
      lookupType(table, llvm::cast<RankedTensorType>(adaptor.getIndices().getType())));
  return success();
}

LogicalResult TensorEmbeddingOp::verify() {
  return verifyRowBlocks(*this, getTable().getType(), getRows());
}

LogicalResult TensorEmbeddingGradOp::verify() {
  if (failed(verifyRowBlocks(*this, getType(), getRows())))
    return failure();
  RankedTensorType expected = lookupType(getType(), getIndices().getType());
  if (expected != getGrad().getType())
    return emitOpError("gradient type ")
           << getGrad().getType() << " does not match the embedding output " << expected;
  return success();
}

LogicalResult BlockIndicesOp::verify() {
  if (getFirst().getType().getShape() != ArrayRef<int64_t>{1})
    return emitOpError("the block's first index must be a tensor of one index, got ")
           << getFirst().getType();
  return success();
}

/// `classes` is the tensor ranks' blocks of `logits`' last dimension.
static LogicalResult verifyClassBlocks(Operation *op, RankedTensorType logits, int64_t classes) {
  int64_t block = logits.getShape().back();
  std::optional<int64_t> ranks = tensorRanksOf(op);
  if (classes % block != 0 || (ranks && classes != block * *ranks))
    return op->emitOpError("the logits' ")
           << block << " classes must be the " << classes << " classes divided by the tensor ranks"
           << (ranks ? " (" + std::to_string(*ranks) + ")" : std::string());
  return success();
}

LogicalResult TensorCrossEntropyOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                     Adaptor adaptor,
                                                     SmallVectorImpl<Type> &inferred) {
  return inferCrossEntropyLoss(loc, getOperationName(), adaptor.getLogits(), adaptor.getTargets(),
                               inferred);
}

LogicalResult TensorCrossEntropyOp::verify() {
  return verifyClassBlocks(*this, getLogits().getType(), getClasses());
}

LogicalResult TensorCrossEntropyGradOp::verify() {
  SmallVector<Type> loss;
  if (failed(inferCrossEntropyLoss(getLoc(), getOperationName(), getLogits(), getTargets(), loss)))
    return failure();
  return verifyClassBlocks(*this, getLogits().getType(), getClasses());
}

/// The positions of `logits` [..., C]: the product of its leading dimensions.
static int64_t positionsOf(RankedTensorType logits) {
  int64_t positions = 1;
  for (int64_t dim : logits.getShape().drop_back())
    positions *= dim;
  return positions;
}

/// `stats` is [`blocks`, 3, positions] f32 (any number of blocks if 0), and
/// `first` one index.
static LogicalResult verifyStatistics(Operation *op, RankedTensorType stats, int64_t positions,
                                      int64_t blocks, Value first = {}) {
  if (first && llvm::cast<RankedTensorType>(first.getType()).getShape() != ArrayRef<int64_t>{1})
    return op->emitOpError("the block's first class must be a tensor of one index, got ")
           << first.getType();
  if (!stats.getElementType().isF32() || stats.getRank() != 3 || stats.getDimSize(1) != 3 ||
      (blocks && stats.getDimSize(0) != blocks) || (positions && stats.getDimSize(2) != positions))
    return op->emitOpError("the statistics must be f32 [")
           << (blocks ? std::to_string(blocks) : std::string("blocks")) << ", 3, "
           << (positions ? std::to_string(positions) : std::string("positions")) << "], got "
           << stats;
  return success();
}

LogicalResult CrossEntropyStatsOp::verify() {
  SmallVector<Type> loss;
  if (failed(inferCrossEntropyLoss(getLoc(), getOperationName(), getLogits(), getTargets(), loss)))
    return failure();
  return verifyStatistics(*this, getType(), positionsOf(getLogits().getType()), 1, getFirst());
}

LogicalResult CrossEntropyCombineOp::verify() {
  return verifyStatistics(*this, getStats().getType(), 0, 0);
}

LogicalResult CrossEntropyBlockGradOp::verify() {
  SmallVector<Type> loss;
  if (failed(inferCrossEntropyLoss(getLoc(), getOperationName(), getLogits(), getTargets(), loss)))
    return failure();
  return verifyStatistics(*this, getStats().getType(), positionsOf(getLogits().getType()), 0,
                          getFirst());
}
