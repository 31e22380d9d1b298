//===- PlanAccounting.cpp - a plan's bytes per rank, before a run --------===//

#include "Planning/PlanAccounting.h"

#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::fsdp;

namespace {

/// Bytes a rank sends when a buffer of `ranks` equal shards of `shardBytes` is
/// all-gathered or reduce-scattered with a ring: all shards but its own.
int64_t ringGatherBytes(int64_t ranks, int64_t shardBytes) { return (ranks - 1) * shardBytes; }

/// Bytes a rank sends in a ring all-reduce of `bytes`: a reduce-scatter then
/// an all-gather of 1/ranks each.
int64_t ringAllReduceBytes(int64_t ranks, int64_t bytes) {
  return ranks == 1 ? 0 : 2 * (ranks - 1) * llvm::divideCeil(bytes, ranks);
}

} // namespace

PlanAccounting mlir::fsdp::accountPlan(const ShardingLayout &layout) {
  PlanAttr plan = layout.plan;
  Strategy strategy = plan.getStrategy();
  int64_t slots = plan.getOptimizer().getStateSlots().size();
  int64_t ranks = layout.shardRanks;
  int64_t k = plan.getMicroBatches();
  // With one rank per shard group a unit is computed on in place: no gathers.
  bool sharded = strategy != Strategy::NoShard && ranks > 1;
  PlanAccounting account;
  account.optimizerSlots = slots;

  SmallVector<int64_t> gathered;
  for (const UnitLayout &unit : layout.units) {
    // A unit travels in param_dtype and reduce_dtype, never wider than it is
    // stored (fsdp-lower-precision).
    int64_t gatherBytes = std::min(unit.elementBytes, dtypeBytes(plan.getParamDtype()));
    int64_t reduceBytes = dtypeBytes(plan.getReduceDtype());
    int64_t shardBytes = unit.shardNumel * unit.elementBytes;
    account.numParams += unit.numel;
    account.params += shardBytes;
    int64_t stateBytes = shardBytes;
    if (unit.trainable) {
      account.grads += shardBytes;
      account.optimizer += slots * shardBytes;
      stateBytes += (1 + slots) * shardBytes;
    }
    std::string dtype;
    llvm::raw_string_ostream(dtype) << unit.elementType;
    account.stateDtypeBytes[dtype] += stateBytes;
    UnitTraffic traffic;
    if (sharded) {
      traffic.gatherForward = ringGatherBytes(ranks, unit.shardNumel * gatherBytes);
      if (strategy != Strategy::ShardGradOp)
        traffic.gatherBackward = traffic.gatherForward;
      if (unit.trainable)
        traffic.reduceScatter = ringGatherBytes(ranks, unit.shardNumel * reduceBytes);
    }
    // Gradients are averaged across copies: all ranks for no_shard, the
    // replicas of each shard for hybrid_shard.
    if (unit.trainable)
      traffic.allReduce = ringAllReduceBytes(layout.replicas, unit.shardNumel * reduceBytes);
    // With k micro-batches every gather runs k times, and so does every
    // reduction unless the flat gradients are summed first (no_sync).
    int64_t reduced = traffic.reduceScatter + traffic.allReduce;
    account.reduceScatter.reduceBytes += k * reduced;
    account.noSync.reduceBytes += reduced;
    if (unit.trainable) {
      account.reduceScatter.accumulatorBytes += shardBytes;
      // A unit nothing reduces sums its gradient shard either way.
      account.noSync.accumulatorBytes += reduced > 0 ? unit.paddedNumel * reduceBytes : shardBytes;
    }
    traffic.gatherForward *= k;
    traffic.gatherBackward *= k;
    if (plan.getAccumulate() == Accumulation::ReduceScatter) {
      traffic.reduceScatter *= k;
      traffic.allReduce *= k;
    }
    account.traffic.push_back(traffic);
    gathered.push_back(sharded ? unit.paddedNumel * gatherBytes : 0);
    // Mirrors ArenaLayout: a trainable unit's master, state and gradient on
    // the host, its shard in param_dtype on the device.
    if (plan.getOffload() == Offload::Optimizer && unit.trainable) {
      PlanAccounting::Offload &offload =
          account.offload ? *account.offload : account.offload.emplace();
      int64_t paramBytes = dtypeBytes(plan.getParamDtype());
      offload.deviceParams += unit.shardNumel * paramBytes;
      offload.masters += shardBytes;
      offload.state += slots * shardBytes;
      offload.gradients += unit.shardNumel * 4;
      if (paramBytes != unit.elementBytes)
        offload.rounded += unit.shardNumel * paramBytes;
    }
  }

  // Gathered copies alive at once: every unit with shard_grad_op (kept from
  // forward to backward); otherwise the unit computing and the ones prefetched
  // behind it, at most max_inflight_gathers ahead.
  int64_t window = strategy == Strategy::ShardGradOp
                       ? static_cast<int64_t>(gathered.size())
                       : 1 + std::min(plan.getPrefetch(), plan.getMaxInflightGathers());
  for (size_t first = 0; first < gathered.size(); ++first) {
    int64_t alive = 0;
    for (size_t i = first; i < std::min(gathered.size(), first + window); ++i)
      alive += gathered[i];
    account.gatheredPeak = std::max(account.gatheredPeak, alive);
  }
  if (plan.getClipGradNorm().convertToDouble() > 0.0)
    account.normAllReduce = ringAllReduceBytes(plan.getDataRanks(), 4);
  return account;
}
