//===- MpiCollectives.cpp - The step's collectives on MPI -----------------===//
//
// The CPU backend's fsdprt_*_start and fsdprt_wait (fsdprt.h; docs/Runtime.md,
// section 6): MPI's nonblocking collectives on the groups of Ranks.h. A
// handle's slot keeps the MPI request, and what fsdprt_wait applies once it
// completes: the division of AVG, for which MPI has no operation.
//
//===----------------------------------------------------------------------===//

#include "Collectives.h"
#include "Error.h"
#include "Ranks.h"
#include "fsdprt/fsdprt.h"

#include <climits>
#include <cstring>
#include <string>

using namespace fsdprt;

namespace {

struct Pending {
  // MPI_REQUEST_NULL for a group of one rank, whose result is already there.
  MPI_Request request = MPI_REQUEST_NULL;
  // AVG: the floats to divide by the group size once the sum is complete.
  float *average = nullptr;
  int64_t averageCount = 0;
  int groupSize = 1;

  /// With AVG, fsdprt_wait divides the `count` floats at `data` by the size.
  void averageOnWait(int32_t op, float *data, int64_t count, int size) {
    if (op != FSDPRT_REDUCE_AVG)
      return;
    average = data;
    averageCount = count;
    groupSize = size;
  }
};

Pending table[kMaxPendingCollectives];

/// A fresh slot for a new handle.
Pending &start(int32_t handle) { return table[handle] = Pending(); }

/// MPI counts are ints: a larger collective is refused rather than truncated.
int mpiCount(const char *what, int64_t count, const char *unit) {
  checkSize(what, count);
  if (count > INT_MAX)
    fatal(std::string(what) + ": " + std::to_string(count) + " " + unit +
          " per rank is more than MPI's int counts hold (2^31 - 1)");
  return static_cast<int>(count);
}

} // namespace

extern "C" int32_t fsdprt_all_gather_start(const void *shard, void *full, int64_t shard_bytes,
                                           int32_t group) {
  const char *what = "fsdprt_all_gather_start";
  int count = mpiCount(what, shard_bytes, "bytes");
  int size = groupSize(group);
  int32_t handle = takeHandle(what);
  Pending &pending = start(handle);
  if (size == 1) {
    if (shard != full)
      std::memmove(full, shard, static_cast<size_t>(count));
    return handle;
  }
  bool inPlace = gatherInPlace(what, shard, full, shard_bytes, groupRank(group), size);
  MPI_Iallgather(inPlace ? MPI_IN_PLACE : shard, count, MPI_BYTE, full, count, MPI_BYTE,
                 groupComm(group), &pending.request);
  return handle;
}

extern "C" int32_t fsdprt_reduce_scatter_start(const float *full, float *shard,
                                               int64_t shard_count, int32_t op, int32_t group) {
  const char *what = "fsdprt_reduce_scatter_start";
  checkReduction(what, op);
  int count = mpiCount(what, shard_count, "floats");
  int size = groupSize(group);
  int64_t shardBytes = shard_count * static_cast<int64_t>(sizeof(float));
  checkReduceScatterBuffers(what, full, shard, shardBytes, size);
  int32_t handle = takeHandle(what);
  Pending &pending = start(handle);
  if (size == 1) {
    // The sum over one rank is its own block; the average divides by 1.
    if (full != shard)
      std::memmove(shard, full, static_cast<size_t>(shardBytes));
    return handle;
  }
  pending.averageOnWait(op, shard, shard_count, size);
  MPI_Ireduce_scatter_block(full, shard, count, MPI_FLOAT, MPI_SUM, groupComm(group),
                            &pending.request);
  return handle;
}

extern "C" int32_t fsdprt_all_reduce_start(float *data, int64_t count, int32_t op,
                                           int32_t group) {
  const char *what = "fsdprt_all_reduce_start";
  checkReduction(what, op);
  int mpiCountValue = mpiCount(what, count, "floats");
  int size = groupSize(group);
  int32_t handle = takeHandle(what);
  Pending &pending = start(handle);
  if (size == 1)
    return handle;
  pending.averageOnWait(op, data, count, size);
  MPI_Iallreduce(MPI_IN_PLACE, data, mpiCountValue, MPI_FLOAT, MPI_SUM, groupComm(group),
                 &pending.request);
  return handle;
}

extern "C" void fsdprt_wait(int32_t handle) {
  checkPendingHandle(handle);
  Pending &pending = table[handle];
  if (pending.request != MPI_REQUEST_NULL)
    MPI_Wait(&pending.request, MPI_STATUS_IGNORE);
  // Dividing the sum gives the same float on every rank, as a real average
  // must (MPI has no average operation).
  float divisor = static_cast<float>(pending.groupSize);
  for (int64_t i = 0; i < pending.averageCount; ++i)
    pending.average[i] /= divisor;
  releaseHandle(handle);
}
