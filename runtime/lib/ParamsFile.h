//===- ParamsFile.h - --load-params and --dump-params files -----*- C++ -*-===//
//
// The file holds every parameter's full values, in manifest order, as raw
// little-endian arrays of its dtype (docs/Runtime.md, section 5): the same
// file whatever the number of ranks. A rank holds only the elements of its
// shard, so loading cuts them out of the file and dumping gathers the shards.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_PARAMSFILE_H
#define FSDPRT_PARAMSFILE_H

#include "HostShards.h"
#include "Manifest.h"
#include "Ranks.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace fsdprt {

class OutputFile;

/// The size of a parameters file: every parameter's bytes.
int64_t paramsFileBytes(const Manifest &manifest);

/// Reads the elements shard `shardIndex` owns from the parameters file
/// `path` into the parameter shards of `shards`; a missing file or one of
/// the wrong size is fatal.
void loadParamShards(const Manifest &manifest, const std::string &path, int64_t shardIndex,
                     const HostShards &shards);

/// The byte offset of a unit's shard of one region (its parameters, its
/// gradient, an optimizer slot), or nothing if the unit has no such region.
using UnitRegionOffset = std::function<std::optional<int64_t>(const UnitSpec &)>;

/// Writes, for every parameter whose unit has the region, the parameter's
/// elements of that region gathered from the shards of the first replica, in
/// manifest order, to `out` on rank 0 (null on the other ranks). Collective
/// over the ranks of replica 0; the other replicas return at once. Errors
/// name `flag`.
void gatherUnitRegion(const Manifest &manifest, const RankPlace &place, const HostShards &shards,
                      OutputFile *out, const char *flag, const UnitRegionOffset &regionOffset);

/// Writes every parameter, gathered from the shards of the first replica, to
/// `out` on rank 0 (null on the other ranks). Collective over the ranks of
/// replica 0; the other replicas return at once.
void dumpParams(const Manifest &manifest, const RankPlace &place, const HostShards &shards,
                OutputFile *out);

} // namespace fsdprt

#endif // FSDPRT_PARAMSFILE_H
