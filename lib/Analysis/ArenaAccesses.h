//===- ArenaAccesses.h - the arena bytes each op of the step touches -*- C++ -*-===//
//
// After fsdp-assign-buffers every buffer of the step is a fixed byte range of
// the arena: what an op reads and writes is a list of byte ranges, and the
// runtime stream it runs on is known (docs/CUDA.md, section 2).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_ANALYSIS_ARENAACCESSES_H
#define FSDP_ANALYSIS_ARENAACCESSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Operation.h"

namespace mlir::fsdp {

/// Bytes [begin, end) of the arena an op reads, or reads and writes.
struct ArenaAccess {
  int64_t begin = 0, end = 0;
  bool write = false;

  /// Overlapping bytes, one of the two writing: the ops must be ordered.
  bool conflictsWith(const ArenaAccess &other) const {
    return begin < other.end && other.begin < end && (write || other.write);
  }
};

/// Calls `fn(memref, write)` for each memref `op` itself says it reads or
/// writes (its memory effects): a scalar or vector load or store.
void forEachMemRefAccess(Operation *op, function_ref<void(Value, bool)> fn);

/// Where a memref's aligned pointer (what a kernel or a library call gets)
/// lies in the arena, and the bytes of the view it lies in, when known.
struct ArenaSpan {
  int64_t pointer;
  std::optional<ArenaAccess> bytes;
};

/// The span of `value`, a static view of `arena` (of `arenaBytes` bytes) or a
/// reshape, cast or subview of one; nothing for anything else. A subview's
/// aligned pointer is its source's: its offset is in its layout.
std::optional<ArenaSpan> arenaSpanOf(Value value, Value arena, int64_t arenaBytes);

class ArenaAccesses {
public:
  /// `step` is fsdp_train_step; its first argument is the arena.
  explicit ArenaAccesses(func::FuncOp step);

  /// What a top-level op of the step reads and writes, its nested ops
  /// included. A derivation this analysis does not follow counts as the whole
  /// arena: that can only add ordering.
  SmallVector<ArenaAccess> of(Operation *op) const;

  /// The runtime stream (RuntimeStream) of an op that touches the arena:
  /// collectives on theirs, everything else on the compute stream.
  static int streamOf(Operation *op);

  /// The bytes behind a buffer, or an address derived from one; the whole
  /// arena when the derivation is not followed; nothing for a scalar.
  std::optional<ArenaAccess> bytesOf(Value value) const { return range(value, false); }

private:
  std::optional<ArenaAccess> range(Value value, bool write) const;
  void add(SmallVector<ArenaAccess> &accesses, Value value, bool write) const;

  Value arena;
  /// The host arena of offload = optimizer (the step's second argument), or
  /// null: what lies there is not device memory.
  Value hostArena;
  int64_t arenaBytes;
};

} // namespace mlir::fsdp

#endif // FSDP_ANALYSIS_ARENAACCESSES_H
