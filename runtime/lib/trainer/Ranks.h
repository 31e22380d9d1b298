//===- Ranks.h - MPI's world and the grid's process groups ------*- C++ -*-===//
//
// A trainer runs as one process per rank under mpirun (docs/Runtime.md,
// section 5); started without mpirun it is a 1-rank run (MPI's singleton
// init). The ranks form a grid of replicas x shard_ranks x tensor_ranks, the
// tensor axis innermost: the shard group of a rank is the shard_ranks ranks of
// its replica and tensor index holding one copy of their blocks of the model,
// its replica group the ranks holding the same shard of the same blocks, its
// tensor group the tensor_ranks consecutive ranks of its data index
// (section 6).
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_TRAINER_RANKS_H
#define FSDPRT_TRAINER_RANKS_H

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace fsdprt {

/// Initialises MPI, once per process; later calls do nothing.
void startMpi();

/// Frees the groups and finalizes MPI if it was started: the end of a
/// successful run.
void finishMpi();

/// Whether MPI is initialised and not yet finalized.
bool mpiRunning();

/// This process's rank in MPI_COMM_WORLD and the world's size (0 of 1 when
/// MPI is not running).
int worldRank();
int worldSize();

/// Where a rank sits in the grid.
struct RankPlace {
  int rank = 0;
  int worldSize = 1;
  int64_t tensorIndex = 0;  // rank % tensor_ranks: the block of split parameters it holds
  int64_t dataIndex = 0;    // rank / tensor_ranks: the rows of the batch it reads
  int64_t shardIndex = 0;   // dataIndex % shard_ranks: the shard it owns
  int64_t replicaIndex = 0; // dataIndex / shard_ranks: the copy of the model it belongs to
  int64_t tensorRanks = 1;

  /// The colours of the world's splits into groups (MPI's and NCCL's): a
  /// shard group is one (replica, tensor index), a replica group one (shard,
  /// tensor index), a tensor group one data index.
  int shardGroupColour() const {
    return static_cast<int>(replicaIndex * tensorRanks + tensorIndex);
  }
  int replicaGroupColour() const {
    return static_cast<int>(shardIndex * tensorRanks + tensorIndex);
  }
  int tensorGroupColour() const { return static_cast<int>(dataIndex); }
};

/// Where world rank `rank` sits in a grid of `shardRanks` ranks per shard
/// group and `tensorRanks` per tensor group (rank and worldSize aside).
RankPlace placeOf(int64_t rank, int64_t shardRanks, int64_t tensorRanks);

/// Splits the world into the shard, replica and tensor groups of a grid with
/// `shardRanks` ranks per shard group and `tensorRanks` per tensor group,
/// replacing earlier groups; returns this rank's place. Collective over the
/// world.
RankPlace setUpGroups(int64_t shardRanks, int64_t tensorRanks = 1);

/// The communicator and size of FSDPRT_GROUP_WORLD, _SHARD, _REPLICA or
/// _TENSOR, and this rank's place in it; an unknown group, or a call before
/// setUpGroups, is fatal.
MPI_Comm groupComm(int32_t group);
int groupSize(int32_t group);
int groupRank(int32_t group);

/// Returns once every rank of the world has called it (a checkpoint's steps),
/// within the step's collective timeout (CollectiveTimeout.h).
void waitForEveryRank();

/// The mean over the world's ranks of each rank's `value` (every rank gets
/// it), within the step's collective timeout (CollectiveTimeout.h).
double averageOverWorld(double value);

/// Returns once `request` completes; fatal, naming what `describe` says it
/// is, when that takes longer than the current step's limit
/// (CollectiveTimeout.h). `lock`, when given, is held around each MPI call:
/// the CPU backend's progress thread completes requests too. Returns whether
/// this call completed it (false: it was already).
bool waitWithinTimeout(MPI_Request &request, const std::function<std::string()> &describe,
                       std::mutex *lock = nullptr);

/// Every rank's `value`, in rank order, on rank 0 (empty on the others).
std::vector<int64_t> gatherToRankZero(int64_t value);

} // namespace fsdprt

#endif // FSDPRT_TRAINER_RANKS_H
