//===- KernelCost.h - the predicted time of one GPU kernel -------*- C++ -*-===//
//
// A kernel's bytes over the memory rate is its time only when its grid keeps
// every streaming multiprocessor busy and no thread runs a long chain of
// dependent iterations: a column sum of one thread per column over 16,384
// rows in order ran a hundred times its bytes' time (docs/CUDA.md, section
// 4). What a kernel does (KernelWork) is priced here, for the kernel table
// of fsdpc --kernels (fsdp-cuda-write-kernel-table) and the step's cost.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_ANALYSIS_KERNELCOST_H
#define FSDP_ANALYSIS_KERNELCOST_H

#include "Analysis/DeviceProfile.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Operation.h"

#include <cstdint>
#include <optional>

namespace mlir::fsdp {

/// The arithmetic of one scalar op of a loop or kernel body: `arithmetic`
/// ops on the multiply-add pipes (exp, log, tanh, pow, sin, cos count 20: the
/// polynomials they become), `divides` on the divider (divisions, square
/// roots), and `floatOps`, the floating-point operations a FLOP count
/// reports (one each; conversions and selects make none).
struct OpArithmetic {
  double arithmetic = 0, divides = 0, floatOps = 0;
};
OpArithmetic arithmeticOf(Operation *op);

/// One launch of a GPU kernel.
struct KernelWork {
  int64_t blocks = 1, threadsPerBlock = 1;
  double bytesRead = 0, bytesWritten = 0;
  /// Every thread's arithmetic together (OpArithmetic's three counts).
  double arithmetic = 0, divides = 0, floatOps = 0;
  /// The iterations of the longest chain of loops one thread runs in order.
  int64_t serialTrips = 1;
  /// Whether an iteration of that chain loads what the one before stored (a
  /// serial scatter's read-modify-write) rather than only registers.
  bool memoryCarried = false;
};

struct KernelTime {
  /// The bytes at the profile's memory rate, or the arithmetic at its rates,
  /// whichever is longer: the kernel's time on a device it fills.
  double roofline = 0;
  /// The roofline over the share of the multiprocessors its blocks occupy,
  /// or its serial chain's iterations at the profile's latency per
  /// iteration, whichever is longer, plus a launch.
  double predicted = 0;
};

KernelTime predictKernelTime(const KernelWork &work, const DeviceProfile &profile);

/// The largest value `bound` takes: a constant, or the smaller of a value and
/// a constant (arith.minsi / minui), as a loop's trip count read from memory
/// and capped by what its lowering knows (the sorted scatter's pieces).
std::optional<int64_t> largestValueOf(Value bound);

/// A loop's iterations in one thread: a lower bound that is the thread's own
/// index (a block's threads striding through a row) counts from 0; an
/// unknown upper bound or step counts once. An upper bound min(n, c) counts
/// c in the thread's `longest` chain and once in its work: the loops with
/// such bounds (the sorted scatter's) visit each element once over all
/// threads.
int64_t loopTrips(scf::ForOp loop, bool longest = false);

/// The most iterations one thread runs in order in the loops of `op`'s
/// body (a loop inside a linalg op's body: a search, a piece's sum), each
/// nest's loops multiplied, the longest nest; 1 without loops.
int64_t bodyLoopTrips(Operation *op);

//===----------------------------------------------------------------------===//
// How fsdp-cuda-form-kernels shapes a linalg op's kernel (docs/CUDA.md,
// section 1), stated here once for it and for the step's predicted time.
//===----------------------------------------------------------------------===//

/// Reductions of at least this many elements per output, along contiguous
/// memory, are summed by a block's threads together rather than by one.
inline constexpr int64_t kCooperativeMinElements = 64;

/// The only combiner op of the single-output float reduction `op`, when the
/// body folds each element into the output with it and it is one a block's
/// threads can combine in a tree (addf, mulf, maximumf, minimumf, maxnumf,
/// minnumf); null otherwise.
Operation *singleCombiner(linalg::LinalgOp op);

/// Whether the reduction `op` gets a block per output, whose threads fold
/// strided slices and combine them: a known combiner, and either no parallel
/// loop (a full reduction) or at least kCooperativeMinElements reduced
/// elements per output along the innermost, contiguous dimension of its first
/// input (its last reduction loop). Otherwise a thread per output.
bool reducesCooperatively(linalg::LinalgOp op);

/// The launch fsdp-cuda-form-kernels makes of `op` alone (its blocks of
/// `blockSize` threads, the iterations a thread runs in order), before any
/// fusion: elementwise work a thread per point, a cooperative reduction a
/// block per output striding through its elements, any other reduction a
/// thread per output running every reduced element; loops in its body add
/// to the serial chain (bodyLoopTrips). Only the shape fields of KernelWork
/// are set.
KernelWork launchShapeOf(linalg::LinalgOp op, int64_t blockSize);

} // namespace mlir::fsdp

#endif // FSDP_ANALYSIS_KERNELCOST_H
