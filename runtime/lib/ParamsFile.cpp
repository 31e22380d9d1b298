//===- ParamsFile.cpp - --load-params and --dump-params files -------------===//

#include "ParamsFile.h"

#include "Error.h"
#include "Init.h"
#include "OutputFile.h"
#include "fsdprt/fsdprt.h"

#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace fsdprt {

int64_t paramsFileBytes(const Manifest &manifest) {
  int64_t total = 0;
  for (const ParamSpec &param : manifest.params)
    total += param.bytes();
  return total;
}

/// Where element `part.begin` of `param` lies in the arena, in the shard
/// `shardIndex` owns of its unit's region at `regionOffset` (the parameter,
/// gradient or an optimizer slot shard: all cover the same elements).
static int64_t shardPosition(const Manifest &manifest, const ParamSpec &param, int64_t shardIndex,
                             ShardRange part, int64_t regionOffset) {
  const UnitSpec &unit = manifest.units[param.unitIndex];
  ShardRange owned = ownedRange(unit, shardIndex);
  return regionOffset +
         (param.unitOffset + part.begin - owned.begin) * static_cast<int64_t>(dtypeSize(param.dtype));
}

void loadParamShards(const Manifest &manifest, const std::string &path, int64_t shardIndex,
                     const HostShards &shards) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    fatal("--load-params: cannot open '" + path + "': " + std::strerror(errno));
  struct stat info;
  if (fstat(fd, &info) != 0) {
    int error = errno;
    ::close(fd);
    fatal("--load-params: cannot stat '" + path + "': " + std::strerror(error));
  }
  int64_t expected = paramsFileBytes(manifest);
  int64_t size = static_cast<int64_t>(info.st_size);
  if (size != expected) {
    ::close(fd);
    fatal("--load-params: '" + path + "' is " + (size < expected ? "shorter" : "longer") +
          " than the " + std::to_string(expected) + " bytes of the model's " +
          std::to_string(manifest.params.size()) + " parameters (it has " + std::to_string(size) +
          ")");
  }
  int64_t fileOffset = 0;
  for (const ParamSpec &param : manifest.params) {
    ShardRange part = ownedPart(param, ownedRange(manifest.units[param.unitIndex], shardIndex));
    int64_t elementSize = static_cast<int64_t>(dtypeSize(param.dtype));
    int64_t remaining = (part.end - part.begin) * elementSize;
    int64_t from = fileOffset + part.begin * elementSize;
    fileOffset += param.bytes();
    if (remaining == 0)
      continue;
    const UnitSpec &unit = manifest.units[param.unitIndex];
    uint8_t *to = shards.of(unit) + shardPosition(manifest, param, shardIndex, part,
                                                  unit.paramOffset);
    while (remaining > 0) {
      ssize_t got = pread(fd, to, static_cast<size_t>(remaining), static_cast<off_t>(from));
      if (got <= 0) {
        int error = got < 0 ? errno : EIO;
        ::close(fd);
        fatal("--load-params: cannot read '" + path + "': " + std::strerror(error));
      }
      remaining -= got;
      from += got;
      to += got;
    }
  }
  ::close(fd);
}

void gatherUnitRegion(const Manifest &manifest, const RankPlace &place, const HostShards &memory,
                      OutputFile *out, const char *flag, const UnitRegionOffset &regionOffset) {
  if (place.replicaIndex != 0)
    return;
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
            : memory.of(unit) + shardPosition(manifest, param, place.shardIndex, mine, *region);
    if (shards == 1) {
      if (out)
        out->write(source, static_cast<size_t>(param.bytes()));
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
    if (out)
      buffer.resize(static_cast<size_t>(param.bytes()));
    MPI_Gatherv(source, counts[static_cast<size_t>(place.shardIndex)], MPI_BYTE, buffer.data(),
                counts.data(), offsets.data(), MPI_BYTE, 0, comm);
    if (out)
      out->write(buffer.data(), buffer.size());
  }
}

void dumpParams(const Manifest &manifest, const RankPlace &place, const HostShards &shards,
                OutputFile *out) {
  gatherUnitRegion(manifest, place, shards, out, "--dump-params",
                   [](const UnitSpec &unit) { return unit.paramOffset; });
}

} // namespace fsdprt
