//===- ParamShards.cpp - A parameter's elements in the shards -------------===//

#include "trainer/ParamShards.h"

#include "abi/Error.h"
#include "fsdprt/fsdprt.h"
#include "io/OutputFile.h"
#include "trainer/TensorBlocks.h"

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

/// One MPI gather holds at most 2^31 - 1 bytes (its counts are int).
static void checkGatherable(const char *flag, const ParamSpec &param, int64_t bytes) {
  if (bytes > INT_MAX)
    fatal(std::string(flag) + ": parameter '" + param.name + "' has " + std::to_string(bytes) +
          " bytes, more than one MPI gather holds (2^31 - 1)");
}

namespace {

/// Gathers a parameter's block from the shards of its shard group to the
/// group's first rank (shard index 0), one parameter at a time.
class BlockGather {
public:
  BlockGather(const Manifest &manifest, const RankPlace &place, const HostShards &memory,
              const char *flag)
      : manifest(manifest), place(place), memory(memory), flag(flag),
        shards(groupSize(FSDPRT_GROUP_SHARD)), counts(static_cast<size_t>(shards)),
        offsets(static_cast<size_t>(shards)) {}

  /// The block of `param`'s region at `region` on the shard group's first
  /// rank (which is the whole of it, in its dtype), null on the others.
  const uint8_t *gather(const ParamSpec &param, int64_t region) {
    const UnitSpec &unit = manifest.units[param.unitIndex];
    int64_t elementSize = static_cast<int64_t>(dtypeSize(param.dtype));
    ShardRange mine = ownedPart(param, ownedRange(unit, place.shardIndex));
    // A rank may own none of a parameter (it sends nothing then).
    const uint8_t *source = mine.begin == mine.end
                                ? memory.arena
                                : memory.of(unit) + shardPosition(manifest, param, place.shardIndex,
                                                                  mine.begin, region);
    if (shards == 1)
      return source;
    checkGatherable(flag, param, param.bytes());
    // The shards' parts of a parameter follow each other in shard order.
    for (int k = 0; k < shards; ++k) {
      ShardRange part = ownedPart(param, ownedRange(unit, k));
      counts[k] = static_cast<int>((part.end - part.begin) * elementSize);
      offsets[k] = static_cast<int>(part.begin * elementSize);
    }
    bool root = place.shardIndex == 0;
    buffer.resize(root ? static_cast<size_t>(param.bytes()) : 0);
    MPI_Gatherv(source, counts[static_cast<size_t>(place.shardIndex)], MPI_BYTE, buffer.data(),
                counts.data(), offsets.data(), MPI_BYTE, 0, groupComm(FSDPRT_GROUP_SHARD));
    return root ? buffer.data() : nullptr;
  }

private:
  const Manifest &manifest;
  const RankPlace &place;
  const HostShards &memory;
  const char *flag;
  int shards;
  std::vector<uint8_t> buffer;
  std::vector<int> counts, offsets;
};

} // namespace

/// Gathers, for one part of the split dimension (the whole dimension without
/// split_parts), every block's share into the whole on the tensor group's
/// first rank: each block's runs of the part, `runBytes` each, every
/// `blockStride` bytes from `block`, land every `wholeStride` bytes from
/// `whole`, block t's `t` runs in (a strided type whose extent is one run).
static void gatherPart(const uint8_t *block, uint8_t *whole, int runs, int runBytes,
                       int blockStride, int wholeStride, int tensors) {
  MPI_Datatype sent, strided, interleaved;
  MPI_Type_vector(runs, runBytes, blockStride, MPI_BYTE, &sent);
  MPI_Type_commit(&sent);
  MPI_Type_vector(runs, runBytes, wholeStride, MPI_BYTE, &strided);
  MPI_Type_create_resized(strided, 0, runBytes, &interleaved);
  MPI_Type_commit(&interleaved);
  std::vector<int> counts(static_cast<size_t>(tensors), 1), displacements;
  for (int t = 0; t < tensors; ++t)
    displacements.push_back(t);
  MPI_Gatherv(block, 1, sent, whole, counts.data(), displacements.data(), interleaved, 0,
              groupComm(FSDPRT_GROUP_TENSOR));
  MPI_Type_free(&interleaved);
  MPI_Type_free(&strided);
  MPI_Type_free(&sent);
}

/// The whole of a parameter on world rank 0 from the blocks of the tensor
/// group of data index 0 (each `block` the whole block): a split parameter's
/// blocks interleave run by run (TensorBlocks.h), received in place by a
/// strided type, one gather per part of split_parts; a replicated one is
/// tensor index 0's. Null on other ranks.
static const uint8_t *assembleWhole(const ParamSpec &param, const uint8_t *block, const char *flag,
                                    std::vector<uint8_t> &whole) {
  int tensors = groupSize(FSDPRT_GROUP_TENSOR);
  bool leader = groupRank(FSDPRT_GROUP_TENSOR) == 0;
  if (tensors == 1 || !param.splitDim)
    return leader ? block : nullptr;
  int64_t elementSize = static_cast<int64_t>(dtypeSize(param.dtype));
  checkGatherable(flag, param, param.wholeElements() * elementSize);
  BlockLayout layout = BlockLayout::of(param);
  int runs = static_cast<int>(layout.blockElements / layout.runElements);
  int64_t rowBytes = layout.runElements * elementSize, sliceBytes = layout.inner * elementSize;
  whole.resize(leader ? static_cast<size_t>(param.wholeElements() * elementSize) : 0);
  // Part i starts at start x inner in a block's row, tensors x that in the whole's.
  int64_t start = 0;
  for (int64_t size : layout.partSizes()) {
    // (Only the leader receives: the others' whole is empty.)
    uint8_t *into = leader ? whole.data() + tensors * start * sliceBytes : nullptr;
    gatherPart(block + start * sliceBytes, into, runs, static_cast<int>(size * sliceBytes),
               static_cast<int>(rowBytes), static_cast<int>(rowBytes * tensors), tensors);
    start += size;
  }
  return leader ? whole.data() : nullptr;
}

void gatherUnitRegion(const Manifest &manifest, const RankPlace &place, const HostShards &memory,
                      const char *flag, const UnitRegionOffset &regionOffset,
                      const GatheredParam &consume) {
  if (place.replicaIndex != 0)
    return;
  BlockGather blocks(manifest, place, memory, flag);
  std::vector<uint8_t> whole;
  for (const ParamSpec &param : manifest.params) {
    std::optional<int64_t> region = regionOffset(manifest.units[param.unitIndex]);
    if (!region)
      continue;
    // One parameter at a time: rank 0 never holds more than the largest one
    // (and, split, its first block).
    const uint8_t *block = blocks.gather(param, *region);
    // The ranks of data index 0 hold the blocks now: they assemble them.
    if (place.dataIndex != 0)
      continue;
    const uint8_t *values = assembleWhole(param, block, flag, whole);
    if (place.rank == 0)
      consume(param, values, static_cast<size_t>(param.wholeElements()) * dtypeSize(param.dtype));
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
