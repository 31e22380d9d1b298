//===- Collectives.cpp - What both backends' collectives share ------------===//

#include "abi/Collectives.h"

#include "abi/Error.h"
#include "fsdprt/fsdprt.h"

#include <algorithm>
#include <string>

namespace fsdprt {

static bool used[kMaxPendingCollectives];
static HandleKind kinds[kMaxPendingCollectives];
static int pendingCount = 0;

int pendingCollectives() { return pendingCount; }

int32_t takeHandle(const char *what, HandleKind kind) {
  for (int32_t handle = 0; handle < kMaxPendingCollectives; ++handle)
    if (!used[handle]) {
      used[handle] = true;
      kinds[handle] = kind;
      ++pendingCount;
      return handle;
    }
  fatal(std::string(what) + ": more than " + std::to_string(kMaxPendingCollectives) +
        " collectives pending (each *_start needs its fsdprt_wait)");
}

void checkPendingHandle(int32_t handle) {
  if (handle < 0 || handle >= kMaxPendingCollectives || !used[handle])
    fatal("fsdprt_wait: handle " + std::to_string(handle) + " is not a pending collective");
}

HandleKind handleKind(int32_t handle) { return kinds[handle]; }

void releaseHandle(int32_t handle) {
  used[handle] = false;
  --pendingCount;
}

void checkReduction(const char *what, int32_t op) {
  if (op != FSDPRT_REDUCE_SUM && op != FSDPRT_REDUCE_AVG)
    fatal(std::string(what) + ": unknown reduction " + std::to_string(op) +
          " (expected 0 sum or 1 avg)");
}

int64_t reductionElementBytes(const char *what, int32_t dtype) {
  if (dtype == FSDPRT_DTYPE_F32)
    return 4;
  if (dtype == FSDPRT_DTYPE_BF16)
    return 2;
  fatal(std::string(what) + ": unknown dtype " + std::to_string(dtype) +
        " (expected 0 f32 or 1 bf16)");
}

void checkSize(const char *what, int64_t count) {
  if (count < 0)
    fatal(std::string(what) + ": negative size " + std::to_string(count));
}

static bool overlap(const void *a, int64_t aBytes, const void *b, int64_t bBytes) {
  auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return aBytes > 0 && bBytes > 0 && x < y + static_cast<uintptr_t>(bBytes) &&
         y < x + static_cast<uintptr_t>(aBytes);
}

bool gatherInPlace(const char *what, const void *shard, const void *full, int64_t shardBytes,
                   int groupRank, int groupSize) {
  if (shard == static_cast<const uint8_t *>(full) + groupRank * shardBytes)
    return true;
  if (groupSize > 1 && overlap(shard, shardBytes, full, shardBytes * groupSize))
    fatal(std::string(what) + ": the shard overlaps the gathered buffer outside its own block");
  return false;
}

void checkReduceScatterBuffers(const char *what, const void *full, const void *shard,
                               int64_t shardBytes, int groupSize) {
  if (groupSize > 1 && overlap(full, shardBytes * groupSize, shard, shardBytes))
    fatal(std::string(what) + ": the shard overlaps the buffer being reduced");
}

namespace {
const std::vector<CollectiveSpec> *stepSequence = nullptr;
size_t nextInSequence = 0;
// The collective started last, described only when a message asks: a start
// is on the step's path.
const char *lastKind = nullptr;
const std::string *lastUnit = nullptr;
const std::string kNoUnit;

std::string kindName(const char *kind) {
  std::string name = kind;
  std::replace(name.begin(), name.end(), '_', '-');
  return name;
}

const std::string &started(const char *kind, const std::string &unit) {
  lastKind = kind;
  lastUnit = &unit;
  return unit;
}
} // namespace

void beginStepCollectives(const std::vector<CollectiveSpec> &sequence) {
  stepSequence = &sequence;
  nextInSequence = 0;
  lastKind = nullptr;
}

const std::string &nextCollectiveUnit(const char *kind) {
  if (!stepSequence || nextInSequence >= stepSequence->size())
    return started(kind, kNoUnit);
  const CollectiveSpec &next = (*stepSequence)[nextInSequence];
  if (next.kind != kind) {
    nextInSequence = stepSequence->size();
    return started(kind, kNoUnit);
  }
  ++nextInSequence;
  return started(kind, next.unit);
}

std::string lastCollectiveStarted() {
  if (!lastKind)
    return "";
  return "the " + kindName(lastKind) + (lastUnit->empty() ? "" : " of unit '" + *lastUnit + "'");
}

std::string groupName(int32_t group) {
  static const char *const kGroups[] = {"the world", "the shard group", "the replica group",
                                        "the tensor group"};
  return group >= 0 && group <= FSDPRT_GROUP_TENSOR ? kGroups[group] : "an unknown group";
}

std::string describeCollective(const char *kind, int64_t bytesPerRank, int32_t group,
                               const std::string &unit) {
  std::string size = std::to_string(bytesPerRank) + " bytes per rank in " + groupName(group);
  return "the " + kindName(kind) +
         (unit.empty() ? " of " + size : " of unit '" + unit + "' (" + size + ")");
}

} // namespace fsdprt
