//===- FormKernels.h - the pieces of fsdp-cuda-form-kernels ---------*- C++ -*-===//
//
// How fsdp-cuda-form-kernels shapes the step's device work into GPU kernels
// (docs/CUDA.md, section 1), one idea a file: reductions
// (ReductionKernels.cpp), scalar ops in the kernels around them
// (ScalarKernels.cpp), vector accesses (WideThreads.cpp), fewer launches
// (KernelFusion.cpp), and the pass itself (FormKernels.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_CODEGEN_CUDA_KERNELFORMATION_FORMKERNELS_H
#define FSDP_CODEGEN_CUDA_KERNELFORMATION_FORMKERNELS_H

#include "Analysis/ArenaAccesses.h"
#include "Analysis/KernelCost.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::fsdp {

//===----------------------------------------------------------------------===//
// Reductions (ReductionKernels.cpp)
//===----------------------------------------------------------------------===//

/// The attribute that marks the block loop of a nest whose threads reduce
/// together: it is already shaped as blocks of threads, and is not tiled.
inline constexpr llvm::StringLiteral kCooperativeNestAttr = "fsdp.cooperative";

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
/// With a `prologue` (isRowPrologue), the block reduction's threads also run
/// it: each computes and stores the prologue's elements it folds, folding
/// the values rather than loading them, and the prologue is erased.
/// A block reduction along one contiguous dimension folds runs of adjacent
/// elements that make `vectorBytes` of its smallest input element, with one
/// vector load of each input a run (and one vector store of each prologue
/// output): a thread folds run after run, the elements of a run in order.
FailureOr<scf::ParallelOp> lowerReduction(RewriterBase &rewriter, linalg::LinalgOp op,
                                          ArrayRef<Value> inits, int64_t blockSize,
                                          int64_t vectorBytes, linalg::LinalgOp prologue = nullptr);

/// Whether the elementwise op `producer`, right before the reduction `op`
/// with only side-effect-free ops in between, can run in `op`'s block
/// reduction (a residual add before a norm's sum of squares): `op` is a
/// block reduction with its parallel loops first over the producer's loop
/// ranges, the producer stores every point of them at that point (identity
/// maps) without reading its outputs' old values, `op` reads the producer's
/// outputs only there and nothing else they overlap, and what `op` writes
/// overlaps nothing the producer reads or writes (by `arena`; without one,
/// before the buffer plan, only distinct buffers are assumed apart).
bool isRowPrologue(linalg::LinalgOp producer, linalg::LinalgOp op, const ArenaAccesses *arena);

/// Runs the elementwise linalg op `op`, which follows the reduction `nest`
/// with only side-effect-free ops in between, in `nest` after the
/// reduction: in a block reduction, block b's threads, which all have row
/// b's result, then stride through row b of `op` (a normalisation after a
/// row's mean or sum); with a thread per output, the thread that made the
/// row goes through it (rows of at most kCooperativeMinElements). `op` reads
/// the result where it would have loaded it. Fails, changing nothing,
/// unless `op`'s leading loops are the reduction's rows, it reads the
/// result only at its own row, touches no other byte of it and writes no
/// byte the reduction reads (by `arena`), and every thread has the result
/// (the reduction started from a value, not from memory). A block's threads
/// go through the row in runs of adjacent elements, as they folded it
/// (vector accesses of `vectorBytes`).
LogicalResult fuseRowEpilogue(RewriterBase &rewriter, scf::ParallelOp nest, linalg::LinalgOp op,
                              const ArenaAccesses &arena, int64_t vectorBytes);

/// The values the scalar (rank-0) linalg op `op` yields when its outputs
/// hold `outs`, computed at the insertion point.
SmallVector<Value> inlineScalarOp(OpBuilder &b, Location loc, linalg::LinalgOp op, ValueRange outs);

/// Whether `nest` is a cooperative nest of a single block (a full
/// reduction), whose thread 0 ends by storing the result.
bool isFullReductionNest(scf::ParallelOp nest);

/// Moves the scalar (rank-0) linalg op `op`, which follows the full
/// reduction `nest` with only side-effect-free ops in between, to the end of
/// what `nest`'s thread 0 does: the step's scalar arithmetic (the loss's
/// mean, the gradient norm's running sum) runs where its input was just
/// made rather than in a kernel of one thread.
void appendToFullReduction(RewriterBase &rewriter, scf::ParallelOp nest, linalg::LinalgOp op);

//===----------------------------------------------------------------------===//
// Scalar ops in other kernels (ScalarKernels.cpp)
//===----------------------------------------------------------------------===//

/// Whether the scalar (rank-0) linalg op `op` costs more than a load when
/// every thread of a kernel repeats it: it computes in f64 or calls a
/// transcendental function (AdamW's bias corrections, 1 - beta^t). Such an
/// op runs once, in a kernel of its own, and the kernels after it load its
/// results.
bool isCostlyScalar(linalg::LinalgOp op);

/// Makes every thread of `nest` compute the scalar (rank-0) linalg op
/// `scalar` first and use the values instead of loading them (in a block
/// reduction, thread 0 where it stores the result); with `store`, the nest's
/// first thread also stores them, for whatever reads them later.
/// Fails (changing nothing) when the nest reaches the scalar's results other
/// than by loading them whole, or writes what the scalar reads.
LogicalResult prependScalar(RewriterBase &rewriter, scf::ParallelOp nest, linalg::LinalgOp scalar,
                            bool store, const ArenaAccesses &arena);

//===----------------------------------------------------------------------===//
// Vector accesses (WideThreads.cpp)
//===----------------------------------------------------------------------===//

/// The memref a memref.load or memref.store accesses, and its indices;
/// null for other ops.
std::pair<Value, ValueRange> accessOf(Operation *op);

/// Whether `memref` can be read and written a vector at a time along its
/// last dimension: a vector element type and unit stride there.
bool hasVectorRows(Value memref);

/// The loads (or stores) `copies` of one element's access, each the same
/// access `k` elements on along a unit-stride last dimension, as one vector
/// access: the vector load where the first load was, each copy's value
/// taken from it; the vector store where the last store was, of the copies'
/// values.
void packAccesses(RewriterBase &rewriter, ArrayRef<Operation *> copies);

/// Gives each thread of the elementwise nest `nest` (an scf.parallel whose
/// last loop goes from 0 by 1 to a static extent) the adjacent elements of
/// its last loop that make `vectorBytes` bytes of the smallest element it
/// accesses contiguously along that loop, as many as divide the extent: the
/// last loop goes over runs of that many elements, the body is repeated for
/// each element of a run, and each contiguous access's copies become one
/// vector.load or vector.store. A body with loops of its own keeps a thread
/// per element. Returns the elements a thread takes (1: `nest` is
/// unchanged). `vectorBytes` is a power of two.
int64_t widenThreads(RewriterBase &rewriter, scf::ParallelOp nest, int64_t vectorBytes);

//===----------------------------------------------------------------------===//
// Fewer launches (KernelFusion.cpp)
//===----------------------------------------------------------------------===//

/// Fuses each run of consecutive independent kernel nests of `body` into one
/// kernel: a launch costs microseconds, and the runs are frequent (a unit's
/// gradients copied into its flat gradient one after the other, the fills
/// that start the attention's accumulators).
void fuseIndependentNests(RewriterBase &rewriter, Block &body, const ArenaAccesses &arena);

/// Merges consecutive block reductions of the same shape that touch no byte
/// the other writes (a norm's backward reduces two products of each row), or
/// single blocks whose folds do not read what the earlier one writes: one
/// kernel whose threads do one, then the other.
void fuseSiblingReductions(RewriterBase &rewriter, Block &body, const ArenaAccesses &arena);

//===----------------------------------------------------------------------===//
// Shared (FormKernels.cpp)
//===----------------------------------------------------------------------===//

/// The memrefs `op` and its nested ops load from and store to.
void collectAccesses(Operation *op, SetVector<Value> &loaded, SetVector<Value> &stored);

/// Whether two byte ranges of the arena overlap (an unknown range overlaps
/// everything).
bool overlap(const std::optional<ArenaAccess> &a, const std::optional<ArenaAccess> &b);

/// Whether nothing between `first` and `second` touches memory.
bool onlyPureOpsBetween(Operation *first, Operation *second);

} // namespace mlir::fsdp

#endif // FSDP_CODEGEN_CUDA_KERNELFORMATION_FORMKERNELS_H
