//===- PlanAccounting.h - a plan's bytes per rank, before a run -*- C++ -*-===//
//
// What none of PyTorch FSDP, DeepSpeed or XLA tells before a run: the bytes a
// rank holds and sends for a plan, computed from the same sharding layout the
// partitioning uses (fsdp-report prints them).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_PLANNING_PLANACCOUNTING_H
#define FSDP_PLANNING_PLANACCOUNTING_H

#include "Analysis/ShardingLayout.h"

#include "llvm/ADT/SmallVector.h"

#include <map>
#include <optional>
#include <string>

namespace mlir::fsdp {

/// Bytes a rank sends per step for one unit, by collective.
struct UnitTraffic {
  int64_t gatherForward = 0, gatherBackward = 0, reduceScatter = 0, allReduce = 0;
};

/// What one way of accumulating micro-batches' gradients keeps across them
/// and sends per step (fsdp-accumulate-micro-batches).
struct AccumulationCost {
  /// The running sums: a gradient shard (reduce_scatter) or a whole flat
  /// gradient (no_sync) per trainable unit that is reduced.
  int64_t accumulatorBytes = 0;
  /// Reduce-scatter and all-reduce bytes a rank sends per step.
  int64_t reduceBytes = 0;
};

/// A rank's bytes for a plan: its sharded state, the gathered units at their
/// peak, what it sends, and what offload keeps where.
struct PlanAccounting {
  int64_t params = 0, grads = 0, optimizer = 0, gatheredPeak = 0;
  /// What each way of accumulating micro-batches costs.
  AccumulationCost reduceScatter, noSync;
  /// The sharded state (parameter, gradient and optimizer shards) by dtype.
  std::map<std::string, int64_t> stateDtypeBytes;
  int64_t optimizerSlots = 0;
  /// offload = optimizer: where the trainable units' shards live.
  struct Offload {
    int64_t deviceParams = 0; // the device's copies, in param_dtype
    int64_t masters = 0, state = 0, gradients = 0, rounded = 0; // host
    int64_t host() const { return masters + state + gradients + rounded; }
  };
  std::optional<Offload> offload;
  int64_t normAllReduce = 0;
  /// Per unit, in the layout's order.
  SmallVector<UnitTraffic> traffic;
  int64_t numParams = 0;

  int64_t persistent() const { return params + grads + optimizer; }
};

/// Exact for the shards (padding included); the gathered peak follows the
/// strategy and the prefetch depth; collectives are ring algorithms (a rank
/// sends (S - 1) / S of a buffer of S shards).
PlanAccounting accountPlan(const ShardingLayout &layout);

} // namespace mlir::fsdp

#endif // FSDP_PLANNING_PLANACCOUNTING_H
