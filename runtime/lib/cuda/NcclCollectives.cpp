//===- NcclCollectives.cpp - The step's collectives on NCCL ---------------===//
//
// The CUDA backend's fsdprt_*_start and fsdprt_wait (fsdprt.h; docs/Runtime.md,
// sections 6 and 7). All-gathers run on the all-gather stream, reduce-scatters
// and all-reduces on the reduce-scatter stream; each start records its
// handle's event after the collective, and fsdprt_wait makes the compute
// stream wait for that event (the host does not block).
//
// The communicators are bootstrapped over MPI: rank 0's NCCL id reaches every
// rank through MPI_Bcast, and the shard and replica groups are split from the
// world's communicator with the colours and keys of Ranks.cpp. A group of one
// rank has no communicator: it needs no communication.
//
// Each group has a communicator per collective stream: NCCL runs the
// operations of one communicator one after another, whatever streams they
// are issued on, so a backward pass's reduce-scatter of one unit and the
// all-gather of the next could not overlap on one (PyTorch issue 64803). The
// all-gather stream's are the splits above; the reduce-scatter stream's
// (reduce-scatters, and every all-reduce: the tensor group's too) are a
// second split of each, with the same ranks in the same order.
//
//===----------------------------------------------------------------------===//

#include "abi/Collectives.h"
#include "abi/Error.h"
#include "cuda/CudaCheck.h"
#include "cuda/CudaDevice.h"
#include "fsdprt/fsdprt.h"

#include <string>

namespace fsdprt {

namespace {

/// A group's communicators, by the stream their collectives run on (the
/// tensor group's one, for its stream, in allGather).
struct GroupCommunicators {
  ncclComm_t allGather = nullptr;
  ncclComm_t reduceScatter = nullptr;
};

/// FSDPRT_GROUP_WORLD, _SHARD, _REPLICA and _TENSOR's.
GroupCommunicators communicators[4];

/// Each handle's completion event, created at its first use.
cudaEvent_t done[kMaxPendingCollectives];

/// This rank's colour in the split of the world into `group`s: its group's
/// (RankPlace), or none when groups are single ranks (no communicator).
int colour(int32_t group, int groupColour) {
  return groupSize(group) > 1 ? groupColour : NCCL_SPLIT_NOCOLOR;
}

/// The stream of a collective over `group` that FSDP's own run on `stream`:
/// the tensor group's collectives, which stand between a block's products,
/// all run on the tensor stream, in order, never behind a unit's gather.
int32_t collectiveStream(int32_t group, int32_t stream) {
  return group == FSDPRT_GROUP_TENSOR ? FSDPRT_STREAM_TENSOR : stream;
}

/// The communicator of `group` (which groupSize has already checked) for
/// collectives on `stream` (collectiveStream's): one per group and stream.
ncclComm_t communicator(int32_t group, int32_t stream) {
  const GroupCommunicators &comms = communicators[group];
  return stream == FSDPRT_STREAM_REDUCE_SCATTER ? comms.reduceScatter : comms.allGather;
}

/// `comm`'s group again, for the reduce-scatter stream; none without `comm`.
ncclComm_t duplicate(ncclComm_t comm, int rank) {
  ncclComm_t copy = nullptr;
  if (comm)
    FSDPRT_NCCL_CHECK(ncclCommSplit(comm, 0, rank, &copy, nullptr));
  return copy;
}

ncclRedOp_t reduction(int32_t op) { return op == FSDPRT_REDUCE_AVG ? ncclAvg : ncclSum; }

ncclDataType_t ncclType(int32_t dtype) {
  return dtype == FSDPRT_DTYPE_BF16 ? ncclBfloat16 : ncclFloat32;
}

/// Each communicator with what an error message calls it.
template <typename Visit> void forEachCommunicator(Visit visit) {
  for (int32_t group :
       {FSDPRT_GROUP_WORLD, FSDPRT_GROUP_SHARD, FSDPRT_GROUP_REPLICA, FSDPRT_GROUP_TENSOR}) {
    GroupCommunicators &comms = communicators[group];
    visit(comms.allGather, groupName(group) + "'s all-gather communicator");
    visit(comms.reduceScatter, groupName(group) + "'s reduce-scatter communicator");
  }
}

/// The collective just enqueued on `stream`, for the watchdog.
void watchCollective(cudaStream_t stream, const char *kind, int64_t bytesPerRank, int32_t group,
                     const std::string &unit) {
  std::string what = describeCollective(kind, bytesPerRank, group, unit);
  watchStream(stream, what);
  afterDeviceWork(what, stream);
}

} // namespace

std::string ncclAsyncError() {
  std::string error;
  forEachCommunicator([&](ncclComm_t comm, const std::string &name) {
    ncclResult_t state = ncclSuccess;
    if (comm && error.empty() && ncclCommGetAsyncError(comm, &state) == ncclSuccess &&
        state != ncclSuccess && state != ncclInProgress)
      error = "NCCL reported an asynchronous error on " + name + ": " + ncclGetErrorString(state);
  });
  return error;
}

void abortNccl() {
  forEachCommunicator([](ncclComm_t comm, const std::string &) {
    if (comm)
      ncclCommAbort(comm);
  });
}

int32_t recordDone(int32_t handle, cudaStream_t stream) {
  recordEvent(done[handle], stream);
  return handle;
}

void connectNccl(const RankPlace &place) {
  closeNccl();
  if (place.worldSize == 1)
    return;
  ncclUniqueId id;
  if (place.rank == 0)
    FSDPRT_NCCL_CHECK(ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, groupComm(FSDPRT_GROUP_WORLD));
  ncclComm_t world = nullptr;
  FSDPRT_NCCL_CHECK(ncclCommInitRank(&world, place.worldSize, id, place.rank));
  communicators[FSDPRT_GROUP_WORLD].allGather = world;
  // Ranks keep their world order inside a group (key = world rank), as in
  // the MPI groups.
  FSDPRT_NCCL_CHECK(ncclCommSplit(world, colour(FSDPRT_GROUP_SHARD, place.shardGroupColour()),
                                  place.rank, &communicators[FSDPRT_GROUP_SHARD].allGather,
                                  nullptr));
  FSDPRT_NCCL_CHECK(ncclCommSplit(world, colour(FSDPRT_GROUP_REPLICA, place.replicaGroupColour()),
                                  place.rank, &communicators[FSDPRT_GROUP_REPLICA].allGather,
                                  nullptr));
  FSDPRT_NCCL_CHECK(ncclCommSplit(world, colour(FSDPRT_GROUP_TENSOR, place.tensorGroupColour()),
                                  place.rank, &communicators[FSDPRT_GROUP_TENSOR].allGather,
                                  nullptr));
  // Every rank takes part in each split (ncclCommSplit is collective over
  // the communicator split), in the same order. The tensor group's
  // collectives share one stream, so one communicator.
  for (int32_t group : {FSDPRT_GROUP_WORLD, FSDPRT_GROUP_SHARD, FSDPRT_GROUP_REPLICA})
    communicators[group].reduceScatter = duplicate(communicators[group].allGather, place.rank);
}

// NCCL's collectives run on their own streams: nothing to move along.
void stopCollectiveProgress() {}

void closeNccl() {
  // The world's last: the others were split from it.
  for (int32_t group :
       {FSDPRT_GROUP_SHARD, FSDPRT_GROUP_REPLICA, FSDPRT_GROUP_TENSOR, FSDPRT_GROUP_WORLD})
    for (ncclComm_t *comm :
         {&communicators[group].reduceScatter, &communicators[group].allGather})
      if (*comm) {
        FSDPRT_NCCL_CHECK(ncclCommDestroy(*comm));
        *comm = nullptr;
      }
  destroyEventTable(done, kMaxPendingCollectives);
}

} // namespace fsdprt

using namespace fsdprt;

extern "C" int32_t fsdprt_all_gather_start(const void *shard, void *full, int64_t shard_bytes,
                                           int32_t group) {
  const char *what = "fsdprt_all_gather_start";
  checkSize(what, shard_bytes);
  int size = groupSize(group);
  int32_t streamId = collectiveStream(group, FSDPRT_STREAM_ALL_GATHER);
  cudaStream_t stream = deviceStream(what, streamId);
  int32_t handle = takeHandle(what);
  // Every start takes its place in the step's sequence, of one rank too.
  const std::string &unit = nextCollectiveUnit("all_gather");
  if (size == 1) {
    if (shard != full && shard_bytes > 0)
      FSDPRT_CUDA_CHECK(cudaMemcpyAsync(full, shard, static_cast<size_t>(shard_bytes),
                                        cudaMemcpyDeviceToDevice, stream));
    return recordDone(handle, stream);
  }
  // NCCL gathers in place by itself when the shard is its own block.
  gatherInPlace(what, shard, full, shard_bytes, groupRank(group), size);
  FSDPRT_NCCL_CHECK(ncclAllGather(shard, full, static_cast<size_t>(shard_bytes), ncclUint8,
                                  communicator(group, streamId), stream));
  watchCollective(stream, "all_gather", shard_bytes, group, unit);
  return recordDone(handle, stream);
}

extern "C" int32_t fsdprt_reduce_scatter_start(const void *full, void *shard, int64_t shard_count,
                                               int32_t dtype, int32_t op, int32_t group) {
  const char *what = "fsdprt_reduce_scatter_start";
  checkReduction(what, op);
  int64_t elementBytes = reductionElementBytes(what, dtype);
  checkSize(what, shard_count);
  int size = groupSize(group);
  int64_t shardBytes = shard_count * elementBytes;
  checkReduceScatterBuffers(what, full, shard, shardBytes, size);
  int32_t streamId = collectiveStream(group, FSDPRT_STREAM_REDUCE_SCATTER);
  cudaStream_t stream = deviceStream(what, streamId);
  int32_t handle = takeHandle(what);
  // Every start takes its place in the step's sequence, of one rank too.
  const std::string &unit = nextCollectiveUnit("reduce_scatter");
  if (size == 1) {
    // The sum over one rank is its own block; the average divides by 1.
    if (full != shard && shardBytes > 0)
      FSDPRT_CUDA_CHECK(cudaMemcpyAsync(shard, full, static_cast<size_t>(shardBytes),
                                        cudaMemcpyDeviceToDevice, stream));
    return recordDone(handle, stream);
  }
  FSDPRT_NCCL_CHECK(ncclReduceScatter(full, shard, static_cast<size_t>(shard_count),
                                      ncclType(dtype), reduction(op), communicator(group, streamId),
                                      stream));
  watchCollective(stream, "reduce_scatter", shardBytes * size, group, unit);
  return recordDone(handle, stream);
}

extern "C" int32_t fsdprt_all_reduce_start(void *data, int64_t count, int32_t dtype, int32_t op,
                                           int32_t group) {
  const char *what = "fsdprt_all_reduce_start";
  checkReduction(what, op);
  reductionElementBytes(what, dtype);
  checkSize(what, count);
  int size = groupSize(group);
  int32_t streamId = collectiveStream(group, FSDPRT_STREAM_REDUCE_SCATTER);
  cudaStream_t stream = deviceStream(what, streamId);
  int32_t handle = takeHandle(what);
  // Every start takes its place in the step's sequence, of one rank too.
  const std::string &unit = nextCollectiveUnit("all_reduce");
  if (size > 1) {
    FSDPRT_NCCL_CHECK(ncclAllReduce(data, data, static_cast<size_t>(count), ncclType(dtype),
                                    reduction(op), communicator(group, streamId), stream));
    watchCollective(stream, "all_reduce", count * reductionElementBytes(what, dtype), group,
                    unit);
  }
  return recordDone(handle, stream);
}

extern "C" void fsdprt_wait(int32_t handle) {
  checkPendingHandle(handle);
  FSDPRT_CUDA_CHECK(cudaStreamWaitEvent(deviceStream("fsdprt_wait", FSDPRT_STREAM_COMPUTE),
                                        done[handle], 0));
  // The host reads what a copy to the host brought (offload's update).
  if (handleKind(handle) == HandleKind::CopyToHost)
    FSDPRT_CUDA_CHECK(cudaEventSynchronize(done[handle]));
  releaseHandle(handle);
}
