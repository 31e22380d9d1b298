//===- ReductionKernels.h - reductions as GPU kernel loop nests -*- C++ -*-===//
//
// How fsdp-form-kernels gives a linalg op with reduction loops the shape of a
// GPU kernel (docs/CUDA.md, section 1): accumulators in registers, the output
// written once, and long rows or whole tensors reduced by all the threads of
// a block together.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_TRANSFORMS_REDUCTIONKERNELS_H
#define FSDP_TRANSFORMS_REDUCTIONKERNELS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::fsdp {

class ArenaAccesses;

/// The attribute that marks the block loop of a nest whose threads reduce
/// together: it is already shaped as blocks of threads, and is not tiled.
inline constexpr llvm::StringLiteral kCooperativeNestAttr = "fsdp.cooperative";

/// Reductions of at least this many elements per output, along contiguous
/// memory, are summed by a block's threads together rather than by one.
inline constexpr int64_t kCooperativeMinElements = 64;

/// The values that fill each output of `op` just before it (a linalg.fill of
/// the same buffer, with nothing in between that touches memory), or null:
/// such fills are folded into the reduction, which starts from the value
/// instead of reading the buffer, and the fill kernel goes away.
SmallVector<Value> takeFusableFills(linalg::LinalgOp op);

/// Lowers `op`, on buffers with its parallel loops first and at least one
/// reduction loop, to a top-level scf.parallel nest. `inits` (one per output,
/// from takeFusableFills) gives the value an output starts from, or null to
/// read it. Each output point's accumulators stay in registers and are
/// stored once. A single-output reduction whose combiner is a known one
/// (addf, mulf, maximumf, minimumf, maxnumf, minnumf) and that either has no
/// parallel loop or reduces at least kCooperativeMinElements contiguous
/// elements per output is a cooperative nest: a block per output point,
/// whose threads each fold a strided slice, then combine in a gpu.all_reduce
/// (a fixed tree: the same order every run), and thread 0 stores. Anything
/// else gets a thread per output point.
FailureOr<scf::ParallelOp> lowerReduction(RewriterBase &rewriter, linalg::LinalgOp op,
                                          ArrayRef<Value> inits, int64_t blockSize);

/// Runs the elementwise linalg op `op`, which follows the block reduction
/// `nest` with only side-effect-free ops in between, in `nest` after the
/// reduction: block b's threads, which all have row b's result, then
/// compute row b of `op` (a normalisation after a row's mean or sum), reading
/// the result where `op` would have loaded it. Fails, changing nothing,
/// unless `op`'s leading loops are the reduction's rows, it reads the
/// result only at its own row, touches no other byte of it and writes no
/// byte the reduction reads (by `arena`), and every thread has the result
/// (the reduction started from a value, not from memory).
LogicalResult fuseRowEpilogue(RewriterBase &rewriter, scf::ParallelOp nest, linalg::LinalgOp op,
                              const ArenaAccesses &arena);

/// The values the scalar (rank-0) linalg op `op` yields when its outputs
/// hold `outs`, computed at the insertion point.
SmallVector<Value> inlineScalarOp(OpBuilder &b, Location loc, linalg::LinalgOp op,
                                  ValueRange outs);

/// Whether `nest` is a cooperative nest of a single block (a full
/// reduction), whose thread 0 ends by storing the result.
bool isFullReductionNest(scf::ParallelOp nest);

/// Moves the scalar (rank-0) linalg op `op`, which follows the full reduction
/// `nest` with only side-effect-free ops in between, to the end of what `nest`'s thread 0 does: the
/// step's scalar arithmetic (the loss's mean, the gradient norm's running
/// sum) runs where its input was just made rather than in a kernel of one
/// thread.
void appendToFullReduction(RewriterBase &rewriter, scf::ParallelOp nest, linalg::LinalgOp op);

} // namespace mlir::fsdp

#endif // FSDP_TRANSFORMS_REDUCTIONKERNELS_H
