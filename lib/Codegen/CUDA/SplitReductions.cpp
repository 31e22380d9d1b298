//===- SplitReductions.cpp - fsdp-cuda-split-reductions: whole-tensor sums in two --===//
//
// A GPU reduces a whole tensor in one block of threads at best: one of its
// 132 streaming multiprocessors. The gradient norm sums every element of each
// unit's shard (53.5 million for a Llama-2-70B unit at 16 ranks), so a sum of
// that size is split into one partial sum per contiguous chunk, each chunk a
// block of its own, then the partials are summed: two kernels instead of one
// that leaves the rest of the GPU idle.
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

struct FSDPSplitReductionsPass
    : public fsdp::impl::FSDPSplitReductionsPassBase<FSDPSplitReductionsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (minElements < 2 || chunkElements < 1 || maxChunks < 2) {
      getOperation().emitError() << "fsdp-cuda-split-reductions: expected min-elements >= 2, "
                                    "chunk-elements >= 1 and max-chunks >= 2";
      return signalPassFailure();
    }
    SmallVector<linalg::GenericOp> sums;
    getOperation().walk([&](linalg::GenericOp op) {
      // A whole tensor of one dimension into one value, on tensors.
      if (op.getNumLoops() == 1 && op.getNumReductionLoops() == 1 && op.getNumDpsInits() == 1 &&
          op.hasPureTensorSemantics() && op.getStaticLoopRanges()[0] >= minElements)
        sums.push_back(op);
    });
    IRRewriter rewriter(&getContext());
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
