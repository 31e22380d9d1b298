//===- ParamShards.cpp - A parameter's elements in the shards -------------===//

#include "trainer/ParamShards.h"

#include "abi/Error.h"
#include "fsdprt/fsdprt.h"
#include "io/OutputFile.h"

#include <climits>
#include <string>
#include <vector>

namespace fsdprt {

int64_t shardPosition(const Manifest &manifest, const ParamSpec &param, int64_t shardIndex,
                      int64_t element, int64_t regionOffset) {
  const UnitSpec &unit = manifest.units[param.unitIndex];
  ShardRange owned = ownedRange(unit, shardIndex);
  return regionOffset +
         (param.unitOffset + element - owned.begin) * static_cast<int64_t>(dtypeSize(param.dtype));
}

void gatherUnitRegion(const Manifest &manifest, const RankPlace &place, const HostShards &memory,
                      const char *flag, const UnitRegionOffset &regionOffset,
                      const GatheredParam &consume) {
  if (place.replicaIndex != 0)
    return;
  bool leader = place.rank == 0;
  int shards = groupSize(FSDPRT_GROUP_SHARD);
  MPI_Comm comm = groupComm(FSDPRT_GROUP_SHARD);
  std::vector<uint8_t> buffer;
  std::vector<int> counts(static_cast<size_t>(shards)), offsets(static_cast<size_t>(shards));
  for (const ParamSpec &param : manifest.params) {
    const UnitSpec &unit = manifest.units[param.unitIndex];
    std::optional<int64_t> region = regionOffset(unit);
    if (!region)
      continue;
    int64_t elementSize = static_cast<int64_t>(dtypeSize(param.dtype));
    ShardRange mine = ownedPart(param, ownedRange(unit, place.shardIndex));
    // A rank may own none of a parameter (it sends nothing then).
    const uint8_t *source =
        mine.begin == mine.end
            ? memory.arena
            : memory.of(unit) + shardPosition(manifest, param, place.shardIndex, mine.begin,
                                              *region);
    if (shards == 1) {
      if (leader)
        consume(param, source, static_cast<size_t>(param.bytes()));
      continue;
    }
    // One parameter at a time: rank 0 never holds more than the largest one.
    if (param.bytes() > INT_MAX)
      fatal(std::string(flag) + ": parameter '" + param.name + "' has " +
            std::to_string(param.bytes()) + " bytes, more than one MPI gather holds (2^31 - 1)");
    // The shards' parts of a parameter follow each other in shard order.
    for (int k = 0; k < shards; ++k) {
      ShardRange part = ownedPart(param, ownedRange(unit, k));
      counts[k] = static_cast<int>((part.end - part.begin) * elementSize);
      offsets[k] = static_cast<int>(part.begin * elementSize);
    }
    if (leader)
      buffer.resize(static_cast<size_t>(param.bytes()));
    MPI_Gatherv(source, counts[static_cast<size_t>(place.shardIndex)], MPI_BYTE, buffer.data(),
                counts.data(), offsets.data(), MPI_BYTE, 0, comm);
    if (leader)
      consume(param, buffer.data(), buffer.size());
  }
}

void gatherUnitRegion(const Manifest &manifest, const RankPlace &place, const HostShards &shards,
                      OutputFile *out, const char *flag, const UnitRegionOffset &regionOffset) {
  gatherUnitRegion(manifest, place, shards, flag, regionOffset,
                   [out](const ParamSpec &, const uint8_t *data, size_t bytes) {
                     if (out)
                       out->write(data, bytes);
                   });
}

} // namespace fsdprt
