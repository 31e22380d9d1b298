//===- MpiCollectives.cpp - The step's collectives on MPI -----------------===//
//
// The CPU backend's fsdprt_*_start and fsdprt_wait (fsdprt.h; docs/Runtime.md,
// section 6): MPI's nonblocking collectives on the groups of Ranks.h. A
// handle's slot keeps the MPI request, and what fsdprt_wait applies once it
// completes: the division of AVG, for which MPI has no operation. bf16
// reductions use an operation of their own (MPI has no bfloat16); bf16 sums
// over a tensor group of more than two ranks gather the ranks' parts and add
// them in rank order at the wait (orderedSumOnWait).
//
//===----------------------------------------------------------------------===//

#include "abi/Collectives.h"
#include "abi/DType.h"
#include "abi/Error.h"
#include "fsdprt/fsdprt.h"
#include "trace/StepTimeline.h"
#include "trainer/Ranks.h"

#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using namespace fsdprt;

namespace {

struct Pending {
  // MPI_REQUEST_NULL for a group of one rank, whose result is already there.
  MPI_Request request = MPI_REQUEST_NULL;
  // AVG: the elements to divide by the group size once the sum is complete.
  void *average = nullptr;
  int64_t averageCount = 0;
  int32_t averageDType = FSDPRT_DTYPE_F32;
  int groupSize = 1;
  // A sum in rank order: every rank's `sumCount` bf16 values, rank-major, to
  // add into `sum` once they have arrived.
  std::vector<uint16_t> parts;
  void *sum = nullptr;
  int64_t sumCount = 0;
  // What a timed-out wait names (describeCollective).
  const char *kind = "";
  int64_t bytesPerRank = 0;
  int32_t group = FSDPRT_GROUP_WORLD;
  const std::string *unit = nullptr; // the manifest's

  void describe(const char *what, int64_t bytes, int32_t of, const std::string &ofUnit) {
    kind = what;
    bytesPerRank = bytes;
    group = of;
    unit = &ofUnit;
  }

  /// With AVG, fsdprt_wait divides the `count` elements at `data` by the size.
  void averageOnWait(int32_t op, void *data, int64_t count, int32_t dtype, int size) {
    if (op != FSDPRT_REDUCE_AVG)
      return;
    average = data;
    averageCount = count;
    averageDType = dtype;
    groupSize = size;
  }

  /// The buffer the group's parts arrive in; fsdprt_wait adds them into
  /// `data` in rank order (addInRankOrder).
  uint16_t *orderedSumOnWait(void *data, int64_t count, int size) {
    parts.assign(static_cast<size_t>(count * size), 0);
    sum = data;
    sumCount = count;
    return parts.data();
  }

  /// Each element the f32 sum of the ranks' bf16 parts, one addition at a
  /// time in rank order, each rounded to bf16: a fixed order of additions,
  /// where MPI's algorithms choose their own (which a reference cannot follow).
  void addInRankOrder() {
    if (sumCount == 0)
      return;
    auto *out = static_cast<uint16_t *>(sum);
    size_t ranks = parts.size() / static_cast<size_t>(sumCount);
    for (int64_t i = 0; i < sumCount; ++i) {
      uint16_t total = parts[i];
      for (size_t r = 1; r < ranks; ++r)
        total = floatToBF16(bf16ToFloat(total) + bf16ToFloat(parts[r * sumCount + i]));
      out[i] = total;
    }
  }
};

Pending table[kMaxPendingCollectives];

/// A fresh slot for a new handle.
Pending &start(int32_t handle) { return table[handle] = Pending(); }

/// MPI's nonblocking collectives move their data only inside MPI calls: a
/// rank that starts an all-gather and then computes gets none of it done
/// until it waits, and prefetch hides nothing. The progress thread calls
/// MPI_Test on the pending requests every kPollInterval while the step
/// computes, so that collectives complete in the background (often enough
/// to keep a ring moving, rarely enough to cost the step nothing measurable:
/// bench/run_timeline_bench.py, docs/CostModel.md). MPI runs
/// MPI_THREAD_SERIALIZED (Ranks.cpp): every MPI call of the collectives holds
/// `mpiLock`, and the thread calls MPI only while a request is pending (the
/// trainer's other MPI calls come after the step's last wait).
/// FSDPRT_PROGRESS_THREAD=0 turns it off: collectives then progress in
/// fsdprt_wait only.
constexpr std::chrono::microseconds kPollInterval(500);
std::mutex mpiLock;
std::condition_variable wake;
int activeRequests = 0; // requests not yet completed, under mpiLock
bool stopping = false;
// Never destroyed: a trainer that stops on an error exits with the thread
// running, and a joinable std::thread destroyed at exit would abort.
std::thread *progress = nullptr;

bool progressWanted() {
  static const bool wanted = [] {
    int level = MPI_THREAD_SINGLE;
    MPI_Query_thread(&level);
    const char *setting = std::getenv("FSDPRT_PROGRESS_THREAD");
    return level >= MPI_THREAD_SERIALIZED && !(setting && std::string(setting) == "0");
  }();
  return wanted;
}

void progressLoop() {
  std::unique_lock<std::mutex> lock(mpiLock);
  for (;;) {
    wake.wait(lock, [] { return stopping || activeRequests > 0; });
    if (stopping)
      return;
    for (Pending &pending : table) {
      if (pending.request == MPI_REQUEST_NULL)
        continue;
      int done = 0;
      MPI_Test(&pending.request, &done, MPI_STATUS_IGNORE);
      if (done)
        --activeRequests;
    }
    lock.unlock();
    std::this_thread::sleep_for(kPollInterval);
    lock.lock();
  }
}

/// A request was started (mpiLock held): the progress thread takes it up.
void requestStarted() {
  ++activeRequests;
  if (!progress && progressWanted())
    progress = new std::thread(progressLoop);
  wake.notify_one();
}

/// MPI counts are ints: a larger collective is refused rather than truncated.
int mpiCount(const char *what, int64_t count, const char *unit) {
  checkSize(what, count);
  if (count > INT_MAX)
    fatal(std::string(what) + ": " + std::to_string(count) + " " + unit +
          " per rank is more than MPI's int counts hold (2^31 - 1)");
  return static_cast<int>(count);
}

/// MPI has no bfloat16: its sums are 2-byte elements added by this operation,
/// each addition of two in f32 rounded once to bf16 (docs/MixedPrecision.md).
void sumBF16(void *in, void *inout, int *length, MPI_Datatype *) {
  const auto *a = static_cast<const uint16_t *>(in);
  auto *b = static_cast<uint16_t *>(inout);
  for (int i = 0; i < *length; ++i)
    b[i] = floatToBF16(bf16ToFloat(a[i]) + bf16ToFloat(b[i]));
}

/// The MPI type and sum of a reduction's dtype.
std::pair<MPI_Datatype, MPI_Op> mpiSum(int32_t dtype) {
  if (dtype == FSDPRT_DTYPE_F32)
    return {MPI_FLOAT, MPI_SUM};
  // Created once, after MPI_Init (the first bf16 reduction).
  static MPI_Op bf16Sum = [] {
    MPI_Op op;
    MPI_Op_create(sumBF16, /*commute=*/1, &op);
    return op;
  }();
  return {MPI_UINT16_T, bf16Sum};
}

/// A tensor group's bf16 sums add the parts of one product (fsdp.tensor_sum):
/// over more than two ranks they add in rank order, so that a step's bits do
/// not depend on MPI's algorithm and the reference can follow them
/// (precision.Precision.tensor_sum). Two ranks' one addition has no order.
bool sumsInRankOrder(int32_t dtype, int32_t group, int size) {
  return dtype == FSDPRT_DTYPE_BF16 && group == FSDPRT_GROUP_TENSOR && size > 2;
}

} // namespace

namespace fsdprt {

void stopCollectiveProgress() {
  {
    std::lock_guard<std::mutex> lock(mpiLock);
    stopping = true;
  }
  wake.notify_all();
  if (progress && progress->joinable())
    progress->join();
  delete progress;
  progress = nullptr;
  stopping = false;
}

} // namespace fsdprt

extern "C" int32_t fsdprt_all_gather_start(const void *shard, void *full, int64_t shard_bytes,
                                           int32_t group) {
  const char *what = "fsdprt_all_gather_start";
  int count = mpiCount(what, shard_bytes, "bytes");
  int size = groupSize(group);
  int32_t handle = takeHandle(what);
  // Every start takes its place in the step's sequence, of one rank too.
  const std::string &unit = nextCollectiveUnit("all_gather");
  if (StepTimeline *timeline = StepTimeline::active())
    timeline->collectiveStarted(handle, "all_gather_start", shard_bytes * size);
  std::lock_guard<std::mutex> lock(mpiLock);
  Pending &pending = start(handle);
  if (size == 1) {
    if (shard != full)
      std::memmove(full, shard, static_cast<size_t>(count));
    return handle;
  }
  bool inPlace = gatherInPlace(what, shard, full, shard_bytes, groupRank(group), size);
  pending.describe("all_gather", shard_bytes, group, unit);
  MPI_Iallgather(inPlace ? MPI_IN_PLACE : shard, count, MPI_BYTE, full, count, MPI_BYTE,
                 groupComm(group), &pending.request);
  requestStarted();
  return handle;
}

extern "C" int32_t fsdprt_reduce_scatter_start(const void *full, void *shard, int64_t shard_count,
                                               int32_t dtype, int32_t op, int32_t group) {
  const char *what = "fsdprt_reduce_scatter_start";
  checkReduction(what, op);
  int64_t elementBytes = reductionElementBytes(what, dtype);
  int count = mpiCount(what, shard_count, "elements");
  int size = groupSize(group);
  int64_t shardBytes = shard_count * elementBytes;
  checkReduceScatterBuffers(what, full, shard, shardBytes, size);
  int32_t handle = takeHandle(what);
  // Every start takes its place in the step's sequence, of one rank too.
  const std::string &unit = nextCollectiveUnit("reduce_scatter");
  if (StepTimeline *timeline = StepTimeline::active())
    timeline->collectiveStarted(handle, "reduce_scatter_start", shardBytes * size);
  std::lock_guard<std::mutex> lock(mpiLock);
  Pending &pending = start(handle);
  if (size == 1) {
    // The sum over one rank is its own block; the average divides by 1.
    if (full != shard)
      std::memmove(shard, full, static_cast<size_t>(shardBytes));
    return handle;
  }
  pending.averageOnWait(op, shard, shard_count, dtype, size);
  pending.describe("reduce_scatter", shardBytes * size, group, unit);
  if (sumsInRankOrder(dtype, group, size)) {
    // Rank r receives every rank's block r, in rank order.
    uint16_t *parts = pending.orderedSumOnWait(shard, shard_count, size);
    MPI_Ialltoall(full, count, MPI_UINT16_T, parts, count, MPI_UINT16_T, groupComm(group),
                  &pending.request);
  } else {
    auto [type, sum] = mpiSum(dtype);
    MPI_Ireduce_scatter_block(full, shard, count, type, sum, groupComm(group), &pending.request);
  }
  requestStarted();
  return handle;
}

extern "C" int32_t fsdprt_all_reduce_start(void *data, int64_t count, int32_t dtype, int32_t op,
                                           int32_t group) {
  const char *what = "fsdprt_all_reduce_start";
  checkReduction(what, op);
  reductionElementBytes(what, dtype);
  int mpiCountValue = mpiCount(what, count, "elements");
  int size = groupSize(group);
  int32_t handle = takeHandle(what);
  // Every start takes its place in the step's sequence, of one rank too.
  const std::string &unit = nextCollectiveUnit("all_reduce");
  if (StepTimeline *timeline = StepTimeline::active())
    timeline->collectiveStarted(handle, "all_reduce_start", count * reductionElementBytes(what, dtype));
  std::lock_guard<std::mutex> lock(mpiLock);
  Pending &pending = start(handle);
  if (size == 1)
    return handle;
  pending.averageOnWait(op, data, count, dtype, size);
  pending.describe("all_reduce", count * reductionElementBytes(what, dtype), group, unit);
  if (sumsInRankOrder(dtype, group, size)) {
    uint16_t *parts = pending.orderedSumOnWait(data, count, size);
    MPI_Iallgather(data, mpiCountValue, MPI_UINT16_T, parts, mpiCountValue, MPI_UINT16_T,
                   groupComm(group), &pending.request);
  } else {
    auto [type, sum] = mpiSum(dtype);
    MPI_Iallreduce(MPI_IN_PLACE, data, mpiCountValue, type, sum, groupComm(group),
                   &pending.request);
  }
  requestStarted();
  return handle;
}

extern "C" void fsdprt_wait(int32_t handle) {
  checkPendingHandle(handle);
  // A copy (HostCopies.cpp) is done when it returns.
  if (handleKind(handle) != HandleKind::Collective) {
    releaseHandle(handle);
    return;
  }
  Pending &pending = table[handle];
  StepTimeline::Clock::time_point begin = StepTimeline::Clock::now();
  bool completedHere = waitWithinTimeout(
      pending.request,
      [&] {
        return describeCollective(pending.kind, pending.bytesPerRank, pending.group, *pending.unit);
      },
      &mpiLock);
  {
    std::lock_guard<std::mutex> lock(mpiLock);
    if (completedHere)
      --activeRequests;
    // Under the lock: a probe of the timeline's reads the arena, which the
    // progress thread's MPI calls would otherwise write beside it (the
    // collectives still in flight).
    if (StepTimeline *timeline = StepTimeline::active())
      timeline->collectiveWaited(handle, begin, StepTimeline::Clock::now());
  }
  if (pending.sum)
    pending.addInRankOrder();
  // Dividing the sum gives the same value on every rank, as a real average
  // must (MPI has no average operation); bf16 rounds the f32 quotient once.
  float divisor = static_cast<float>(pending.groupSize);
  if (pending.averageDType == FSDPRT_DTYPE_BF16) {
    auto *values = static_cast<uint16_t *>(pending.average);
    for (int64_t i = 0; i < pending.averageCount; ++i)
      values[i] = floatToBF16(bf16ToFloat(values[i]) / divisor);
  } else {
    auto *values = static_cast<float *>(pending.average);
    for (int64_t i = 0; i < pending.averageCount; ++i)
      values[i] /= divisor;
  }
  releaseHandle(handle);
}
