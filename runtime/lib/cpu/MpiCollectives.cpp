//===- Collectives.cpp - The step's nonblocking collectives ---------------===//

#include "Collectives.h"

#include "Error.h"
#include "Ranks.h"
#include "fsdprt/fsdprt.h"

#include <climits>
#include <cstring>
#include <string>

namespace fsdprt {

namespace {

struct Pending {
  bool used = false;
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
int pendingCount = 0;

int32_t allocate(const char *what) {
  for (int32_t handle = 0; handle < kMaxPendingCollectives; ++handle)
    if (!table[handle].used) {
      table[handle] = Pending();
      table[handle].used = true;
      ++pendingCount;
      return handle;
    }
  fatal(std::string(what) + ": more than " + std::to_string(kMaxPendingCollectives) +
        " collectives pending (each *_start needs its fsdprt_wait)");
}

/// MPI counts are ints: a larger collective is refused rather than truncated.
int mpiCount(const char *what, int64_t count, const char *unit) {
  if (count < 0)
    fatal(std::string(what) + ": negative size " + std::to_string(count));
  if (count > INT_MAX)
    fatal(std::string(what) + ": " + std::to_string(count) + " " + unit +
          " per rank is more than MPI's int counts hold (2^31 - 1)");
  return static_cast<int>(count);
}

bool overlap(const void *a, int64_t aBytes, const void *b, int64_t bBytes) {
  auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return aBytes > 0 && bBytes > 0 && x < y + static_cast<uintptr_t>(bBytes) &&
         y < x + static_cast<uintptr_t>(aBytes);
}

void checkOp(const char *what, int32_t op) {
  if (op != FSDPRT_REDUCE_SUM && op != FSDPRT_REDUCE_AVG)
    fatal(std::string(what) + ": unknown reduction " + std::to_string(op) +
          " (expected 0 sum or 1 avg)");
}

} // namespace

int pendingCollectives() { return pendingCount; }

} // namespace fsdprt

using namespace fsdprt;

extern "C" int32_t fsdprt_all_gather_start(const void *shard, void *full, int64_t shard_bytes,
                                           int32_t group) {
  const char *what = "fsdprt_all_gather_start";
  int count = mpiCount(what, shard_bytes, "bytes");
  int size = groupSize(group);
  MPI_Comm comm = groupComm(group);
  int32_t handle = allocate(what);
  if (size == 1) {
    if (shard != full)
      std::memmove(full, shard, static_cast<size_t>(count));
    return handle;
  }
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  auto *own = static_cast<uint8_t *>(full) + static_cast<int64_t>(rank) * shard_bytes;
  // A shard already in its place in `full` is MPI's in-place gather; any
  // other overlap would be read while it is written.
  const void *send = shard;
  if (shard == own)
    send = MPI_IN_PLACE;
  else if (overlap(shard, shard_bytes, full, shard_bytes * size))
    fatal(std::string(what) + ": the shard overlaps the gathered buffer outside its own block");
  MPI_Iallgather(send, count, MPI_BYTE, full, count, MPI_BYTE, comm, &table[handle].request);
  return handle;
}

extern "C" int32_t fsdprt_reduce_scatter_start(const float *full, float *shard,
                                               int64_t shard_count, int32_t op, int32_t group) {
  const char *what = "fsdprt_reduce_scatter_start";
  checkOp(what, op);
  int count = mpiCount(what, shard_count, "floats");
  int size = groupSize(group);
  MPI_Comm comm = groupComm(group);
  int64_t shardBytes = shard_count * static_cast<int64_t>(sizeof(float));
  if (size > 1 && overlap(full, shardBytes * size, shard, shardBytes))
    fatal(std::string(what) + ": the shard overlaps the buffer being reduced");
  int32_t handle = allocate(what);
  Pending &pending = table[handle];
  if (size == 1) {
    // The sum over one rank is its own block; the average divides by 1.
    if (full != shard)
      std::memmove(shard, full, static_cast<size_t>(shardBytes));
    return handle;
  }
  pending.averageOnWait(op, shard, shard_count, size);
  MPI_Ireduce_scatter_block(full, shard, count, MPI_FLOAT, MPI_SUM, comm, &pending.request);
  return handle;
}

extern "C" int32_t fsdprt_all_reduce_start(float *data, int64_t count, int32_t op,
                                           int32_t group) {
  const char *what = "fsdprt_all_reduce_start";
  checkOp(what, op);
  int mpiCountValue = mpiCount(what, count, "floats");
  int size = groupSize(group);
  MPI_Comm comm = groupComm(group);
  int32_t handle = allocate(what);
  Pending &pending = table[handle];
  if (size == 1)
    return handle;
  pending.averageOnWait(op, data, count, size);
  MPI_Iallreduce(MPI_IN_PLACE, data, mpiCountValue, MPI_FLOAT, MPI_SUM, comm, &pending.request);
  return handle;
}

extern "C" void fsdprt_wait(int32_t handle) {
  if (handle < 0 || handle >= kMaxPendingCollectives || !table[handle].used)
    fatal("fsdprt_wait: handle " + std::to_string(handle) + " is not a pending collective");
  Pending &pending = table[handle];
  if (pending.request != MPI_REQUEST_NULL)
    MPI_Wait(&pending.request, MPI_STATUS_IGNORE);
  // Dividing the sum gives the same float on every rank, as a real average
  // must (MPI has no average operation).
  float divisor = static_cast<float>(pending.groupSize);
  for (int64_t i = 0; i < pending.averageCount; ++i)
    pending.average[i] /= divisor;
  pending = Pending();
  --pendingCount;
}
