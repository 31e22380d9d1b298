//===- VocabularyParallel.cpp - ops over blocks of a vocabulary -----------===//
//
// What each tensor rank computes of the ops over its block of a vocabulary.
// The rank's first row or class is read from a buffer of every rank's, made
// where the kernels run, at fsdprt_group_rank (as fsdp.tensor_chunk reads
// its block).
//
// fsdp.tensor_embedding: the block's table followed by a row of zeros, read
// at fsdp.block_indices (the indices outside the block read the zeros); its
// gradient the embedding's gradient into that padded table, the zero row's
// dropped. The lookup is computed as the whole one is, row for row.
//
// fsdp.tensor_cross_entropy and its gradient on logits the tensor ranks hold
// in blocks of classes (a vocabulary-parallel output head): each rank
// computes its block's statistics a position (fsdp.cross_entropy_stats: the
// maximum, the sum of exponentials below it, the target's logit where it
// holds the target), the ranks all-gather those 3 floats a position, and
// each combines them in rank order. The logits are never gathered: the
// statistics are 3 / (C / T) of their bytes. The gradient reads the loss's
// gathered statistics (the logits' block is read once less); without the
// loss in the step it computes them itself.
//
//===----------------------------------------------------------------------===//

#include "StepLowering.h"

#include "fsdp/IR/BufferKinds.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

using namespace mlir;
using namespace mlir::fsdp;

Value StepLowering::blockStart(Location loc, int64_t block) {
  int64_t ranks = tensorRanks();
  Type i64 = b.getI64Type();
  auto firsts = RankedTensorType::get({ranks}, i64);
  Value bytes = allocBytes(loc, tensorBytes(firsts), kCollectiveKind);
  // Every rank's first, t * block, computed where the kernels run (the
  // device's memory on a GPU); the rank's own read from it as
  // fsdp.tensor_chunk reads its block.
  AffineMap identity = b.getMultiDimIdentityMap(1);
  linalg::GenericOp::create(
      b, loc, TypeRange{}, ValueRange{}, view(loc, bytes, 0, {ranks}, i64), identity,
      utils::IteratorType::parallel, [&](OpBuilder &nb, Location l, ValueRange) {
        Value rank =
            arith::IndexCastOp::create(nb, l, nb.getI64Type(), linalg::IndexOp::create(nb, l, 0));
        Value first = arith::MulIOp::create(
            nb, l, rank, arith::ConstantOp::create(nb, l, nb.getI64IntegerAttr(block)));
        linalg::YieldOp::create(nb, l, first);
      });
  auto one = RankedTensorType::get({1}, i64);
  return bufferization::ToTensorOp::create(b, loc, one, ownBlock(loc, bytes, one, ranks),
                                           b.getUnitAttr(), UnitAttr());
}

Value StepLowering::blockIndices(Location loc, Value indices, int64_t block) {
  Value &local = localIndices[{indices, block}];
  if (!local)
    local = BlockIndicesOp::create(b, loc, indices, blockStart(loc, block), block);
  return local;
}

/// [rows + 1, D] for a table block [rows, D]: the block and a row of zeros.
static RankedTensorType paddedTable(RankedTensorType table) {
  return table.clone({table.getDimSize(0) + 1, table.getDimSize(1)});
}

void StepLowering::lowerTensorEmbedding(TensorEmbeddingOp embedding) {
  Location loc = embedding.getLoc();
  RankedTensorType table = embedding.getTable().getType();
  Value local = blockIndices(loc, embedding.getIndices(), table.getDimSize(0));
  Value padded = SliceGradOp::create(b, loc, paddedTable(table), embedding.getTable(),
                                     /*dim=*/0, /*offset=*/0);
  embedding.getResult().replaceAllUsesWith(EmbeddingOp::create(b, loc, padded, local));
}

void StepLowering::lowerTensorEmbeddingGrad(TensorEmbeddingGradOp grad) {
  Location loc = grad.getLoc();
  RankedTensorType table = grad.getType();
  int64_t rows = table.getDimSize(0);
  Value local = blockIndices(loc, grad.getIndices(), rows);
  Value padded = EmbeddingGradOp::create(b, loc, paddedTable(table), local, grad.getGrad());
  grad.getResult().replaceAllUsesWith(
      SliceOp::create(b, loc, padded, /*dim=*/0, /*offset=*/0, rows).getResult());
}

Operation *StepLowering::withGatheredStatistics(Location loc, Value logits, Value targets,
                                                Value first,
                                                function_ref<Operation *(Value)> build) {
  auto type = llvm::cast<RankedTensorType>(logits.getType());
  int64_t positions = type.getNumElements() / type.getShape().back();
  Type f32 = b.getF32Type();
  Value stats = CrossEntropyStatsOp::create(b, loc, RankedTensorType::get({1, 3, positions}, f32),
                                            logits, targets, first);
  auto gather = TensorAllGatherOp::create(
      b, loc, RankedTensorType::get({tensorRanks(), 3, positions}, f32), stats, /*dim=*/0);
  Operation *reader = build(gather.getResult());
  // The gather starts right before its reader and is waited for there: the
  // statistics are all it needs, and nothing else waits on them.
  b.setInsertionPoint(reader);
  lowerTensorAllGather(gather, stats, /*dim=*/0);
  gather.erase();
  return reader;
}

void StepLowering::lowerTensorCrossEntropy(TensorCrossEntropyOp loss) {
  Location loc = loss.getLoc();
  int64_t block = loss.getLogits().getType().getShape().back();
  Value first = blockStart(loc, block);
  Operation *combine = withGatheredStatistics(
      loc, loss.getLogits(), loss.getTargets(), first, [&](Value stats) -> Operation * {
        return CrossEntropyCombineOp::create(b, loc, loss.getType(), stats);
      });
  lossStatistics[{loss.getLogits(), loss.getTargets()}] = {first, combine->getOperand(0)};
  loss.getResult().replaceAllUsesWith(combine->getResult(0));
}

void StepLowering::lowerTensorCrossEntropyGrad(TensorCrossEntropyGradOp grad) {
  Location loc = grad.getLoc();
  auto build = [&](Value first, Value stats) -> Operation * {
    return CrossEntropyBlockGradOp::create(b, loc, grad.getType(), grad.getLogits(),
                                           grad.getTargets(), first, stats, grad.getGrad());
  };
  auto known = lossStatistics.find({grad.getLogits(), grad.getTargets()});
  if (known != lossStatistics.end()) {
    auto [first, stats] = known->second;
    grad.getResult().replaceAllUsesWith(build(first, stats)->getResult(0));
    return;
  }
  int64_t block = grad.getLogits().getType().getShape().back();
  Value first = blockStart(loc, block);
  Operation *blockGrad = withGatheredStatistics(loc, grad.getLogits(), grad.getTargets(), first,
                                                [&](Value stats) { return build(first, stats); });
  grad.getResult().replaceAllUsesWith(blockGrad->getResult(0));
}
