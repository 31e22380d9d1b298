//===- ParamShards.h - A parameter's elements in the shards -----*- C++ -*-===//
//
// A rank holds, of every unit, the elements of its shard (docs/Sharding.md):
// the parts of the unit's parameters that fall in it. What reads or writes
// whole parameters (--export, --trace-state, --init-from, checkpoints) finds
// a parameter's elements there, and gathers a parameter's parts from the
// shards of the first replica one parameter at a time, so that rank 0 never
// holds more than the largest parameter. With tensor ranks, each tensor
// index's shard group gathers its block, and the blocks are assembled into
// the whole parameter on rank 0 (TensorBlocks.h).
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_TRAINER_PARAMSHARDS_H
#define FSDPRT_TRAINER_PARAMSHARDS_H

#include "abi/Manifest.h"
#include "trainer/HostShards.h"
#include "trainer/Init.h"
#include "trainer/Ranks.h"

#include <cstdint>
#include <functional>
#include <optional>

namespace fsdprt {

class OutputFile;

/// The byte offset, in the rank's shards, of element `element` of `param`
/// (which shard `shardIndex` owns) in its unit's region at `regionOffset`
/// (the parameter, gradient or an optimizer slot shard: all cover the same
/// elements).
int64_t shardPosition(const Manifest &manifest, const ParamSpec &param, int64_t shardIndex,
                      int64_t element, int64_t regionOffset);

/// The byte offset of a unit's shard of one region (its parameters, its
/// gradient, an optimizer slot), or nothing if the unit has no such region.
using UnitRegionOffset = std::function<std::optional<int64_t>(const UnitSpec &)>;

/// What rank 0 does with each gathered parameter: its whole values (all its
/// blocks), in its dtype, row-major.
using GatheredParam = std::function<void(const ParamSpec &, const uint8_t *data, size_t bytes)>;

/// Gathers, for every parameter whose unit has the region, the parameter's
/// elements of that region from the shards of the first replica, its blocks
/// from every tensor index (a replicated parameter from tensor index 0), in
/// manifest order, and hands them to `consume` on rank 0 (ignored on the
/// other ranks). Collective over the ranks of replica 0; the other replicas
/// return at once. Errors name `flag`.
void gatherUnitRegion(const Manifest &manifest, const RankPlace &place, const HostShards &shards,
                      const char *flag, const UnitRegionOffset &regionOffset,
                      const GatheredParam &consume);

/// The same, writing each parameter's bytes to `out` (null on ranks but 0).
void gatherUnitRegion(const Manifest &manifest, const RankPlace &place, const HostShards &shards,
                      OutputFile *out, const char *flag, const UnitRegionOffset &regionOffset);

} // namespace fsdprt

#endif // FSDPRT_TRAINER_PARAMSHARDS_H
