//===- FakeNccl.cpp - Host stand-ins for NCCL, over MPI
//--------------------===//
//
// With FakeCuda.cpp (and the linker's --wrap for each function here), the
// CUDA backend's collectives run between processes without a GPU: under
// mpirun, each communicator is an MPI communicator (ncclCommInitRank's is a
// duplicate of the world, ncclCommSplit's MPI_Comm_split's), and a
// collective moves the host bytes that stand for device memory with MPI, in
// its stream's order (at enqueue, or at each launch of a captured graph).
// Reductions sum the ranks' values in f32 in rank order and round once to the
// element type (NCCL's ring orders and rounds its partial sums its own way).
// Each call is logged among the CUDA runtime's, its communicator named
// `comm<N>`: `ncclAllGather(device2+0, device2+16, 4, uint8, comm2, stream2)`.
//
// Faults, injected through the environment, count the collectives this
// process runs (from 1; each graph launch runs its collectives again):
// FSDPRT_FAKE_NCCL_STALL_AT=N makes the N-th never complete (its stream
// stalls, FakeCuda.h's stallStream), as when a peer stops answering;
// FSDPRT_FAKE_NCCL_ERROR_AT=N does the same, and its communicator then
// reports ncclRemoteError to ncclCommGetAsyncError, as when a link fails.
// ncclCommGetAsyncError is not logged (a watchdog polls it from a thread).
//
//===----------------------------------------------------------------------===//

#include "abi/DType.h"
#include "cuda/FakeCuda.h"

#include <mpi.h>
#include <nccl.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

namespace {

/// What a fake communicator is: its MPI communicator.
std::map<const void *, MPI_Comm> &communicators() {
  static auto *instance =
      new std::map<const void *, MPI_Comm>; // calls may come at exit
  return *instance;
}

MPI_Comm mpiOf(ncclComm_t comm) {
  auto found = communicators().find(comm);
  return found == communicators().end() ? MPI_COMM_NULL : found->second;
}

ncclComm_t adopt(MPI_Comm mpi) {
  auto *comm = static_cast<ncclComm_t>(fake_cuda::makeHandle("comm"));
  communicators()[comm] = mpi;
  return comm;
}

const char *typeName(ncclDataType_t type) {
  switch (type) {
  case ncclUint8:
    return "uint8";
  case ncclFloat32:
    return "f32";
  case ncclBfloat16:
    return "bf16";
  default:
    return "other";
  }
}

size_t elementBytes(ncclDataType_t type) {
  return type == ncclFloat32 ? 4 : type == ncclBfloat16 ? 2 : 1;
}

float load(const uint8_t *bytes, ncclDataType_t type) {
  if (type == ncclFloat32) {
    float value;
    std::memcpy(&value, bytes, 4);
    return value;
  }
  uint16_t bits;
  std::memcpy(&bits, bytes, 2);
  return fsdprt::bf16ToFloat(bits);
}

void store(uint8_t *bytes, float value, ncclDataType_t type) {
  if (type == ncclFloat32) {
    std::memcpy(bytes, &value, 4);
    return;
  }
  uint16_t bits = fsdprt::floatToBF16(value);
  std::memcpy(bytes, &bits, 2);
}

/// The asynchronous errors of the communicators that have one.
std::map<const void *, ncclResult_t> &asyncErrors() {
  static auto *instance = new std::map<const void *, ncclResult_t>;
  return *instance;
}

/// The collective an environment variable names (0: none).
long faultAt(const char *variable) {
  const char *value = std::getenv(variable);
  return value ? std::atol(value) : 0;
}

/// Whether the collective about to run on `comm` is the injected fault:
/// then its stream stalls, and with FSDPRT_FAKE_NCCL_ERROR_AT `comm` reports
/// the error.
bool injectedFault(ncclComm_t comm, cudaStream_t stream) {
  static const long stallAt = faultAt("FSDPRT_FAKE_NCCL_STALL_AT");
  static const long errorAt = faultAt("FSDPRT_FAKE_NCCL_ERROR_AT");
  static long run = 0;
  ++run;
  if (run != stallAt && run != errorAt)
    return false;
  if (run == errorAt)
    asyncErrors()[comm] = ncclRemoteError;
  fake_cuda::stallStream(stream);
  return true;
}

/// Runs `work` with `comm`'s MPI communicator in `stream`'s order.
template <typename Work>
ncclResult_t onStream(ncclComm_t comm, cudaStream_t stream, Work work) {
  MPI_Comm mpi = mpiOf(comm);
  if (mpi == MPI_COMM_NULL)
    return ncclInvalidArgument;
  fake_cuda::enqueueOn(stream, [=] {
    if (!injectedFault(comm, stream))
      work(mpi);
  });
  return ncclSuccess;
}

const char *opName(ncclRedOp_t op) { return op == ncclAvg ? "avg" : "sum"; }

/// Every rank's `count` elements from `send`, then into `recv` the reduction
/// of the `count` elements at `first` (a rank's block, or all of them).
void reduce(const void *send, void *recv, size_t count, size_t first,
            size_t recvCount, ncclDataType_t type, ncclRedOp_t op,
            MPI_Comm mpi) {
  int size;
  MPI_Comm_size(mpi, &size);
  size_t bytes = count * elementBytes(type);
  std::vector<uint8_t> all(bytes * static_cast<size_t>(size));
  MPI_Allgather(send, static_cast<int>(bytes), MPI_BYTE, all.data(),
                static_cast<int>(bytes), MPI_BYTE, mpi);
  size_t width = elementBytes(type);
  for (size_t i = 0; i < recvCount; ++i) {
    float sum = 0;
    for (int r = 0; r < size; ++r)
      sum += load(all.data() + static_cast<size_t>(r) * bytes +
                      (first + i) * width,
                  type);
    store(static_cast<uint8_t *>(recv) + i * width,
          op == ncclAvg ? sum / size : sum, type);
  }
}

} // namespace

extern "C" {

ncclResult_t __wrap_ncclGetUniqueId(ncclUniqueId *id) {
  fake_cuda::Serial serial;
  fake_cuda::logCall("ncclGetUniqueId");
  std::memset(id, 0, sizeof(*id));
  std::strcpy(id->internal, "fake-nccl");
  return ncclSuccess;
}

ncclResult_t __wrap_ncclCommInitRank(ncclComm_t *comm, int nranks,
                                     ncclUniqueId id, int rank) {
  fake_cuda::Serial serial;
  fake_cuda::logCall("ncclCommInitRank", nranks, rank);
  int worldRank, worldSize;
  MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
  MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
  if (std::strcmp(id.internal, "fake-nccl") != 0 || nranks != worldSize ||
      rank != worldRank)
    return ncclInvalidArgument;
  MPI_Comm mpi;
  MPI_Comm_dup(MPI_COMM_WORLD, &mpi);
  *comm = adopt(mpi);
  fake_cuda::logResult(fake_cuda::handleName(*comm));
  return ncclSuccess;
}

ncclResult_t __wrap_ncclCommSplit(ncclComm_t comm, int color, int key,
                                  ncclComm_t *newcomm, ncclConfig_t *) {
  fake_cuda::Serial serial;
  fake_cuda::logCall("ncclCommSplit", fake_cuda::handleName(comm), color, key);
  MPI_Comm parent = mpiOf(comm), mpi;
  if (parent == MPI_COMM_NULL)
    return ncclInvalidArgument;
  MPI_Comm_split(parent, color == NCCL_SPLIT_NOCOLOR ? MPI_UNDEFINED : color,
                 key, &mpi);
  *newcomm = mpi == MPI_COMM_NULL ? nullptr : adopt(mpi);
  fake_cuda::logResult(*newcomm ? fake_cuda::handleName(*newcomm) : "none");
  return ncclSuccess;
}

ncclResult_t __wrap_ncclCommDestroy(ncclComm_t comm) {
  fake_cuda::Serial serial;
  fake_cuda::logCall("ncclCommDestroy", fake_cuda::handleName(comm));
  MPI_Comm mpi = mpiOf(comm);
  if (mpi == MPI_COMM_NULL)
    return ncclInvalidArgument;
  MPI_Comm_free(&mpi);
  communicators().erase(comm);
  return ncclSuccess;
}

ncclResult_t __wrap_ncclAllGather(const void *send, void *recv, size_t count,
                                  ncclDataType_t type, ncclComm_t comm,
                                  cudaStream_t stream) {
  fake_cuda::Serial serial;
  fake_cuda::logCall("ncclAllGather", fake_cuda::placeOf(send),
                     fake_cuda::placeOf(recv), count, typeName(type),
                     fake_cuda::handleName(comm),
                     fake_cuda::handleName(stream));
  return onStream(comm, stream, [=](MPI_Comm mpi) {
    int rank;
    MPI_Comm_rank(mpi, &rank);
    int bytes = static_cast<int>(count * elementBytes(type));
    auto *own =
        static_cast<uint8_t *>(recv) + static_cast<size_t>(rank) * bytes;
    MPI_Allgather(send == own ? MPI_IN_PLACE : send, bytes, MPI_BYTE, recv,
                  bytes, MPI_BYTE, mpi);
  });
}

ncclResult_t __wrap_ncclReduceScatter(const void *send, void *recv,
                                      size_t count, ncclDataType_t type,
                                      ncclRedOp_t op, ncclComm_t comm,
                                      cudaStream_t stream) {
  fake_cuda::Serial serial;
  fake_cuda::logCall("ncclReduceScatter", fake_cuda::placeOf(send),
                     fake_cuda::placeOf(recv), count, typeName(type),
                     opName(op), fake_cuda::handleName(comm),
                     fake_cuda::handleName(stream));
  return onStream(comm, stream, [=](MPI_Comm mpi) {
    int rank, size;
    MPI_Comm_rank(mpi, &rank);
    MPI_Comm_size(mpi, &size);
    reduce(send, recv, count * static_cast<size_t>(size),
           count * static_cast<size_t>(rank), count, type, op, mpi);
  });
}

ncclResult_t __wrap_ncclAllReduce(const void *send, void *recv, size_t count,
                                  ncclDataType_t type, ncclRedOp_t op,
                                  ncclComm_t comm, cudaStream_t stream) {
  fake_cuda::Serial serial;
  fake_cuda::logCall("ncclAllReduce", fake_cuda::placeOf(send),
                     fake_cuda::placeOf(recv), count, typeName(type),
                     opName(op), fake_cuda::handleName(comm),
                     fake_cuda::handleName(stream));
  return onStream(comm, stream, [=](MPI_Comm mpi) {
    reduce(send, recv, count, 0, count, type, op, mpi);
  });
}

ncclResult_t __wrap_ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *state) {
  fake_cuda::Serial serial;
  if (mpiOf(comm) == MPI_COMM_NULL)
    return ncclInvalidArgument;
  auto found = asyncErrors().find(comm);
  *state = found == asyncErrors().end() ? ncclSuccess : found->second;
  return ncclSuccess;
}

// The process is about to stop: the MPI communicator is left as it is.
ncclResult_t __wrap_ncclCommAbort(ncclComm_t comm) {
  fake_cuda::Serial serial;
  fake_cuda::logCall("ncclCommAbort", fake_cuda::handleName(comm));
  return mpiOf(comm) == MPI_COMM_NULL ? ncclInvalidArgument : ncclSuccess;
}

} // extern "C"
