//===- Collectives.h - What both backends' collectives share ----*- C++ -*-===//
//
// fsdprt_all_gather_start, fsdprt_reduce_scatter_start,
// fsdprt_all_reduce_start and fsdprt_wait (fsdprt.h; docs/Runtime.md,
// section 6) run on MPI's nonblocking collectives on the CPU backend
// (lib/cpu/MpiCollectives.cpp) and on NCCL on the CUDA backend
// (lib/cuda/NcclCollectives.cpp). Their handles and the checks of their
// arguments are the contract's, the same for both, and live here: a handle
// indexes a table of kMaxPendingCollectives slots, and each backend keeps
// what it needs per handle in its own table of that size.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_ABI_COLLECTIVES_H
#define FSDPRT_ABI_COLLECTIVES_H

#include "abi/Manifest.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fsdprt {

/// At most this many collectives may be pending at once: more means a step
/// that never waits for its handles.
constexpr int kMaxPendingCollectives = 256;

/// Stops whatever the backend runs beside the step to move collectives along
/// (the CPU's progress thread), before MPI finishes.
void stopCollectiveProgress();

/// The number of collectives started and not yet waited for. The runtime
/// checks it is 0 after every step.
int pendingCollectives();

/// What a handle completes: fsdprt_wait treats a copy to the host apart (the
/// host reads its bytes next).
enum class HandleKind { Collective, CopyToHost, CopyToDevice };

/// A free handle for the collective (or copy) `what` is starting; fatal when
/// kMaxPendingCollectives are pending.
int32_t takeHandle(const char *what, HandleKind kind = HandleKind::Collective);

/// The kind of a pending handle.
HandleKind handleKind(int32_t handle);

/// Checks that `handle` (fsdprt_wait's argument) is pending; fatal otherwise.
void checkPendingHandle(int32_t handle);

/// Frees a pending handle for a later start.
void releaseHandle(int32_t handle);

/// Checks `op` is FSDPRT_REDUCE_SUM or FSDPRT_REDUCE_AVG.
void checkReduction(const char *what, int32_t op);

/// Checks `dtype` is FSDPRT_DTYPE_F32 or FSDPRT_DTYPE_BF16; returns the
/// bytes of one element.
int64_t reductionElementBytes(const char *what, int32_t dtype);

/// Checks a collective's size (elements or bytes per rank) is not negative.
void checkSize(const char *what, int64_t count);

/// Whether the all-gather's `shard` already sits at its own block (group rank
/// `groupRank`) of `full`: the in-place gather of MPI and NCCL. Any other
/// overlap would be read while it is written: fatal on a group of more than
/// one rank.
bool gatherInPlace(const char *what, const void *shard, const void *full, int64_t shardBytes,
                   int groupRank, int groupSize);

/// A reduce-scatter's `full` (groupSize blocks of shardBytes) and `shard` must
/// not overlap on a group of more than one rank; fatal otherwise.
void checkReduceScatterBuffers(const char *what, const void *full, const void *shard,
                               int64_t shardBytes, int groupSize);

/// The collectives the step about to be called starts (its manifest's, in
/// order, or none): each start then takes the next one's unit.
void beginStepCollectives(const std::vector<CollectiveSpec> &sequence);

/// The unit of the collective being started, of `kind` (`all_gather`,
/// `reduce_scatter` or `all_reduce`): the sequence's next one's. Empty when
/// the sequence does not say, or once it has named another kind (then it no
/// longer describes this step).
/// The name lives as long as the sequence (the manifest).
const std::string &nextCollectiveUnit(const char *kind);

/// The collective started last, as describeCollective names it without its
/// size (`the all-gather of unit 'layers.0'`), or empty: context for an error
/// the device reports later.
std::string lastCollectiveStarted();

/// `the world`, `the shard group`, `the replica group` or `the tensor group`.
std::string groupName(int32_t group);

/// A collective as a timeout names it: `the all-gather of unit 'layers.0'
/// (1024 bytes per rank in the shard group)`, or without a unit `the
/// all-reduce of 4 bytes per rank in the world`.
std::string describeCollective(const char *kind, int64_t bytesPerRank, int32_t group,
                               const std::string &unit);

} // namespace fsdprt

#endif // FSDPRT_ABI_COLLECTIVES_H
