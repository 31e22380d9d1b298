//===- Init.h - Initial parameter values ------------------------*- C++ -*-===//
//
// docs/Runtime.md, section 3: a parameter element's initial value depends only
// on (seed, parameter name, element index). Filling any sub-range gives the
// same bytes as filling the whole tensor, which is what lets a rank initialise
// just its shard: together the shards hold the values of a 1-rank run.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_TRAINER_INIT_H
#define FSDPRT_TRAINER_INIT_H

#include "abi/Manifest.h"
#include "trainer/HostShards.h"

#include <cstdint>
#include <vector>

namespace fsdprt {

/// The product of every dimension but the last (of a split parameter, its
/// whole shape's).
double fanIn(const std::vector<int64_t> &shape);

/// The initial value (in double, before rounding to the parameter's dtype) of
/// the element with row-major index `index` of the parameter with id
/// `paramId` (the FNV-1a hash of its name).
double initialValue(const InitSpec &init, double fanIn, uint64_t seed, uint64_t paramId,
                    uint64_t index);

/// Writes the initial values of elements [begin, end) of `param`'s block
/// `tensorIndex` (of the whole parameter when it is not split), rounded to its
/// dtype, to `dst` (which holds end - begin elements). Each element gets the
/// value of its place in the whole parameter (TensorBlocks.h): the blocks
/// together hold the values of an unsplit run.
void initializeRange(const ParamSpec &param, uint64_t seed, int64_t begin, int64_t end, void *dst,
                     int64_t tensorIndex = 0);

/// The elements [begin, end) of a unit's flat buffer that a rank owns.
struct ShardRange {
  int64_t begin = 0;
  int64_t end = 0;
};

/// The range shard `shardIndex` (rank % shard_ranks) owns in `unit`.
ShardRange ownedRange(const UnitSpec &unit, int64_t shardIndex);

/// The part of `param` inside `owned`, as element indices of the parameter
/// (empty when begin == end).
ShardRange ownedPart(const ParamSpec &param, ShardRange owned);

/// Writes the initial values of the elements of every parameter that shard
/// `shardIndex` owns, of the blocks of tensor index `tensorIndex`, into the
/// parameter shards of `shards`. Padding and everything else are left alone
/// (the arenas start zero-filled).
void initializeShards(const Manifest &manifest, uint64_t seed, int64_t shardIndex,
                      const HostShards &shards, int64_t tensorIndex = 0);

} // namespace fsdprt

#endif // FSDPRT_TRAINER_INIT_H
