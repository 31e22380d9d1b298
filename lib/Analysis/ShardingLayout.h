//===- ShardingLayout.h - units as flat, padded, sharded buffers -*- C++ -*-===//
//
// How each FSDP unit's parameters are flattened into one buffer and split
// across the ranks of the shard axis. The partitioning pass lays memory out
// this way and fsdp-report accounts for it, so the two always agree.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_ANALYSIS_SHARDINGLAYOUT_H
#define FSDP_ANALYSIS_SHARDINGLAYOUT_H

#include "fsdp/IR/FSDPOps.h"

namespace mlir::fsdp {

/// A parameter's place inside its unit's flat buffer, in elements.
struct ParamSlice {
  ParamOp param;
  int64_t offset = 0;
  int64_t numel = 0;
};

/// One unit: its parameters back to back in declaration order, padded so that
/// every rank of the shard axis owns the same whole number of 64-byte blocks.
struct UnitLayout {
  StringRef name;
  SmallVector<ParamSlice> params;
  Type elementType;
  bool trainable = true;
  int64_t numel = 0;       // elements of the parameters
  int64_t paddedNumel = 0; // elements of the flat buffer
  int64_t shardNumel = 0;  // elements each rank owns
  int64_t elementBytes = 0;
};

struct ShardingLayout {
  PlanAttr plan;
  /// Ranks a unit is split across (1 without sharding), and copies of each
  /// shard (the replicas of hybrid_shard).
  int64_t shardRanks = 1, replicas = 1;
  /// Units in the order of their first parameter's declaration.
  SmallVector<UnitLayout> units;

  /// Fails, with a diagnostic, when the plan is missing or a parameter has no
  /// unit (run fsdp-form-units first).
  static FailureOr<ShardingLayout> build(ModuleOp module);

  /// Elements of a flat buffer's shard are padded to this multiple: 64 bytes
  /// of f32, so every shard starts on a cache line.
  static constexpr int64_t kShardAlignment = 16;
};

} // namespace mlir::fsdp

#endif // FSDP_ANALYSIS_SHARDINGLAYOUT_H
