//===- SplitReductions.cpp - fsdp-cuda-split-reductions: long sums in two -===//
//
// A GPU reduces a whole tensor in one block of threads at best: one of its
// 132 streaming multiprocessors. The gradient norm sums every element of each
// unit's shard (53.5 million for a Llama-2-70B unit at 16 ranks), so a sum of
// that size is split into one partial sum per contiguous chunk, each chunk a
// block of its own, then the partials are summed: two kernels instead of one
// that leaves the rest of the GPU idle.
//
// A column sum (a norm's gain gradient: every row's contribution to each
// column) gets a thread per column, which would add its rows in order: 2,048
// threads on 8 of the 132 multiprocessors, each 16,384 rows long, for the 1B
// Llama. Its rows are split into chunks the same way, a thread per (chunk,
// column), then a thread per column sums the chunks: in a fixed order, so
// the same bits every run.
//
//===----------------------------------------------------------------------===//

#include "fsdp/Codegen/CUDA/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPSPLITREDUCTIONSPASS
#include "fsdp/Codegen/CUDA/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;
using namespace mlir::fsdp;

namespace {

/// The number of chunks a reduction of `elements` is split into: the largest
/// divisor of `elements` that leaves each chunk at least `chunk` elements and
/// makes no more than `maxChunks`; 1 when there is none.
int64_t chunksFor(int64_t elements, int64_t chunk, int64_t maxChunks) {
  for (int64_t count = std::min(maxChunks, elements / chunk); count > 1; --count)
    if (elements % count == 0)
      return count;
  return 1;
}

/// Whether `op` is a column sum: a single float output, its reduction loops
/// first and its parallel loops after them (a thread per output, which would
/// run every row), and a body that does not read its loop indices.
bool isColumnSum(linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInits() != 1 ||
      op.getNumParallelLoops() == 0 || op.getNumReductionLoops() == 0 ||
      !getElementTypeOrSelf(op.getDpsInits()[0].getType()).isF32() ||
      llvm::any_of(op.getBlock()->getOperations(), llvm::IsaPred<linalg::IndexOp>))
    return false;
  auto iterators = op.getIteratorTypesArray();
  unsigned reductions = op.getNumReductionLoops();
  return llvm::all_of(ArrayRef(iterators).take_front(reductions),
                      [](utils::IteratorType type) { return type == utils::IteratorType::reduction; });
}

/// The chunks a column sum of `rows` rows of `columns` columns is split into:
/// the fewest that divide the rows into chunks of at most `maxRows` rows and
/// give at least `minThreads` (chunk, column) threads, while each chunk keeps
/// at least `minRows` rows; the most chunks short of that; 1 when no divisor
/// of the rows gives chunks of `minRows` to `maxRows` rows.
int64_t columnChunks(int64_t rows, int64_t columns, int64_t minRows, int64_t maxRows,
                     int64_t minThreads) {
  int64_t best = 1;
  for (int64_t count = 2; count <= rows / minRows; ++count) {
    if (rows % count != 0 || rows / count > maxRows)
      continue;
    best = count;
    if (count * columns >= minThreads)
      break;
  }
  return best;
}

/// Splits the column sum `op` in two: its reduction loops collapsed into one
/// loop over the rows (the operands viewed as rows), then split by
/// splitReduction into `chunks` x (rows / chunks).
void splitColumnSum(IRRewriter &rewriter, linalg::GenericOp op, int64_t minRows, int64_t maxRows,
                    int64_t minThreads) {
  unsigned reductions = op.getNumReductionLoops();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return;
  int64_t rows = 1, columns = 1;
  for (auto [index, range] : llvm::enumerate(ranges))
    (index < reductions ? rows : columns) *= range;
  int64_t chunks = columnChunks(rows, columns, minRows, maxRows, minThreads);
  if (rows <= maxRows || chunks < 2)
    return;
  linalg::LinalgOp rowsOp = op;
  ReassociationIndices rowLoops = llvm::to_vector(llvm::seq<int64_t>(0, reductions));
  if (reductions > 1) {
    // Only where every operand holds the reduction loops' indices side by
    // side (a [B, T, D] activation and its [B, T] statistics): a view.
    if (!linalg::areDimSequencesPreserved(op.getIndexingMapsArray(), {rowLoops}))
      return;
    rewriter.setInsertionPoint(op);
    FailureOr<linalg::CollapseResult> collapsed =
        linalg::collapseOpIterationDims(op, {rowLoops}, rewriter);
    if (failed(collapsed))
      return;
    rewriter.replaceOp(op, collapsed->results);
    rowsOp = collapsed->collapsedOp;
  }
  rewriter.setInsertionPoint(rowsOp);
  (void)linalg::splitReduction(rewriter, rowsOp, [&](linalg::LinalgOp) {
    return linalg::SplitReductionOptions{chunks, /*index=*/0, /*innerParallel=*/false};
  });
}

struct FSDPSplitReductionsPass
    : public fsdp::impl::FSDPSplitReductionsPassBase<FSDPSplitReductionsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (minElements < 2 || chunkElements < 1 || maxChunks < 2) {
      getOperation().emitError() << "fsdp-cuda-split-reductions: expected min-elements >= 2, "
                                    "chunk-elements >= 1 and max-chunks >= 2";
      return signalPassFailure();
    }
    if (columnMinRows < 1 || columnMaxRows < columnMinRows) {
      getOperation().emitError() << "fsdp-cuda-split-reductions: expected 1 <= column-min-rows "
                                    "<= column-max-rows";
      return signalPassFailure();
    }
    SmallVector<linalg::GenericOp> sums, columnSums;
    getOperation().walk([&](linalg::GenericOp op) {
      // A whole tensor of one dimension into one value, on tensors.
      if (op.getNumLoops() == 1 && op.getNumReductionLoops() == 1 && op.getNumDpsInits() == 1 &&
          op.hasPureTensorSemantics() && op.getStaticLoopRanges()[0] >= minElements)
        sums.push_back(op);
      else if (isColumnSum(op))
        columnSums.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::GenericOp op : columnSums)
      splitColumnSum(rewriter, op, columnMinRows, columnMaxRows, columnMinThreads);
    for (linalg::GenericOp op : sums) {
      int64_t chunks = chunksFor(op.getStaticLoopRanges()[0], chunkElements, maxChunks);
      if (chunks < 2)
        continue;
      rewriter.setInsertionPoint(op);
      // A combiner splitReduction does not know (no neutral element) leaves
      // the op as it was.
      (void)linalg::splitReduction(rewriter, op, [&](linalg::LinalgOp) {
        return linalg::SplitReductionOptions{chunks, /*index=*/0, /*innerParallel=*/false};
      });
    }
  }
};

} // namespace
