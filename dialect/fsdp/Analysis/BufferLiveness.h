//===- BufferLiveness.h - when a buffer of the step is live -----*- C++ -*-===//
//
// A buffer of the step (one block of ops) is live from the op that creates it
// to the last op that uses it or anything computed from it. fsdp-assign-buffers
// places buffers by these lives; the memory over the step is drawn from them.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_ANALYSIS_BUFFERLIVENESS_H
#define FSDP_ANALYSIS_BUFFERLIVENESS_H

#include "mlir/IR/Block.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir::fsdp {

/// The position of the last op of `block` that uses `root`, or anything
/// computed from it, transitively (`position`: every op of the block's).
int64_t lastUse(Value root, Block &block, const llvm::DenseMap<Operation *, int64_t> &position);

} // namespace mlir::fsdp

#endif // FSDP_ANALYSIS_BUFFERLIVENESS_H
