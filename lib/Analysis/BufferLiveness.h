//===- BufferLiveness.h - when a buffer of the step is live -----*- C++ -*-===//
//
// A buffer of the step is live from the op that creates it to the last op
// that uses it or anything computed from it. The step is one block of ops,
// and loops the host runs in it (the attention's key blocks), whose bodies
// are numbered in line after the loop: a buffer of a body lives within an
// iteration, a buffer from outside that a body uses lives to the loop's end
// (the next iteration reads it again). An op marked as a row prologue (a
// GPU kernel runs it with the reduction after it) uses its operands until
// that reduction. fsdp-assign-buffers places buffers by these lives; the
// memory over the step is drawn from them.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_ANALYSIS_BUFFERLIVENESS_H
#define FSDP_ANALYSIS_BUFFERLIVENESS_H

#include "mlir/IR/Block.h"
#include "llvm/ADT/DenseMap.h"

#include <vector>

namespace mlir::fsdp {

/// The ops of the step in program order: the step's block, with the bodies of
/// its scf.for loops in line after each loop.
struct StepPositions {
  explicit StepPositions(Block &step);

  /// Every op by position, and the op of the step's block it is part of.
  std::vector<Operation *> ops, top;
  llvm::DenseMap<Operation *, int64_t> position;
  /// A loop's last position: that of the last op of its body.
  llvm::DenseMap<Operation *, int64_t> end;

  /// The last position at which `root`, or anything computed from it, is
  /// used, transitively; a use in a loop that `root` is not defined in
  /// counts at the loop's end.
  int64_t lastUse(Value root) const;
};

} // namespace mlir::fsdp

#endif // FSDP_ANALYSIS_BUFFERLIVENESS_H
