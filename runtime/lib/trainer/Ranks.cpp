//===- Ranks.cpp - MPI's world and the grid's process groups --------------===//

#include "trainer/Ranks.h"

#include "abi/CollectiveTimeout.h"
#include "abi/Collectives.h"

#include "abi/Error.h"
#include "fsdprt/fsdprt.h"

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#if defined(__SANITIZE_ADDRESS__)
// Under AddressSanitizer, LeakSanitizer would report what MPI allocates at
// MPI_Init and never frees, in every trainer and test that runs MPI. Those
// leaks are suppressed by library; the full unwinder on malloc is what
// finds the MPI frames behind its plugins' allocations (the fast one stops at
// code without frame pointers). Leaks of the runtime and of generated code
// are still reported. These definitions override the sanitizer's defaults in
// any program linked with the runtime, trainers included.
extern "C" const char *__asan_default_options() { return "fast_unwind_on_malloc=0"; }

// Not a table of the suppressed leaks after every run: errors are one line.
extern "C" const char *__lsan_default_options() { return "print_suppressions=0"; }

extern "C" const char *__lsan_default_suppressions() {
  return "leak:libmpi.so\n"
         "leak:libopen-pal.so\n"
         "leak:libopen-rte.so\n"
         "leak:libhwloc.so\n"
         "leak:libpmix.so\n"
         "leak:libevent\n"
         "leak:mca_\n"
         // Not MPI's: the sanitizer's own bookkeeping of a thread (OpenBLAS
         // starts some) that is still starting when the process exits.
         "leak:GetThreadStackTopAndBottom\n";
}
#endif

namespace fsdprt {

namespace {

struct Group {
  MPI_Comm comm = MPI_COMM_NULL;
  int size = 1;
  int rank = 0;
};

/// The generated step's groups. The world is a duplicate of MPI_COMM_WORLD so
/// that the step's collectives and the runtime's own (the loss, the dump)
/// never match each other.
struct Groups {
  bool ready = false;
  Group world, shard, replica, tensor;
};

Groups groups;

Group makeGroup(MPI_Comm comm) {
  Group group;
  group.comm = comm;
  MPI_Comm_size(comm, &group.size);
  MPI_Comm_rank(comm, &group.rank);
  return group;
}

void freeGroups() {
  if (!groups.ready)
    return;
  for (Group *group : {&groups.world, &groups.shard, &groups.replica, &groups.tensor})
    if (group->comm != MPI_COMM_NULL)
      MPI_Comm_free(&group->comm);
  groups = Groups();
}

/// Whether a launcher (mpirun, srun, ...) started this process as one rank of
/// a world. Otherwise it is a single process and needs no MPI at all: that
/// keeps a plain `./trainer` free of MPI's start-up, whose singleton mode
/// also races on its session directory when several trainers start at once.
bool launchedAsRank() {
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (std::getenv(name))
      return true;
  return false;
}

} // namespace

bool mpiRunning() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

void startMpi() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized)
    fatal("MPI was already finalized in this process: a trainer runs once");
  // Serialized calls from more than one thread: the CPU backend's progress
  // thread tests pending collectives while the step computes.
  int provided = MPI_THREAD_SINGLE;
  if (!initialized && launchedAsRank() &&
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
    fatal("cannot initialise MPI");
}

void finishMpi() {
  if (!mpiRunning())
    return;
  stopCollectiveProgress();
  freeGroups();
  MPI_Finalize();
}

int worldRank() {
  int rank = 0;
  if (mpiRunning())
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int worldSize() {
  int size = 1;
  if (mpiRunning())
    MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

RankPlace placeOf(int64_t rank, int64_t shardRanks, int64_t tensorRanks) {
  RankPlace place;
  place.rank = static_cast<int>(rank);
  place.tensorIndex = rank % tensorRanks;
  place.dataIndex = rank / tensorRanks;
  place.shardIndex = place.dataIndex % shardRanks;
  place.replicaIndex = place.dataIndex / shardRanks;
  place.tensorRanks = tensorRanks;
  return place;
}

RankPlace setUpGroups(int64_t shardRanks, int64_t tensorRanks) {
  freeGroups();
  RankPlace place = placeOf(worldRank(), shardRanks, tensorRanks);
  place.worldSize = worldSize();
  if (!mpiRunning()) {
    // A single process: every group is this process alone.
    groups.ready = true;
    return place;
  }
  MPI_Comm world, shard, replica, tensor;
  MPI_Comm_dup(MPI_COMM_WORLD, &world);
  // Ranks keep their order inside a group (key = world rank), so a rank's
  // place in its shard group is its shard index, in its tensor group its
  // tensor index.
  MPI_Comm_split(MPI_COMM_WORLD, place.shardGroupColour(), place.rank, &shard);
  MPI_Comm_split(MPI_COMM_WORLD, place.replicaGroupColour(), place.rank, &replica);
  MPI_Comm_split(MPI_COMM_WORLD, place.tensorGroupColour(), place.rank, &tensor);
  groups.world = makeGroup(world);
  groups.shard = makeGroup(shard);
  groups.replica = makeGroup(replica);
  groups.tensor = makeGroup(tensor);
  groups.ready = true;
  return place;
}

static const Group &group(int32_t id) {
  if (!groups.ready)
    fatal("a collective was started before the trainer set up its process groups");
  switch (id) {
  case FSDPRT_GROUP_WORLD:
    return groups.world;
  case FSDPRT_GROUP_SHARD:
    return groups.shard;
  case FSDPRT_GROUP_REPLICA:
    return groups.replica;
  case FSDPRT_GROUP_TENSOR:
    return groups.tensor;
  }
  fatal("collective on unknown group " + std::to_string(id) +
        " (expected 0 world, 1 shard, 2 replica or 3 tensor)");
}

MPI_Comm groupComm(int32_t id) { return group(id).comm; }

int groupSize(int32_t id) { return group(id).size; }

int groupRank(int32_t id) { return group(id).rank; }

void waitForEveryRank() {
  if (worldSize() == 1)
    return;
  MPI_Request request;
  MPI_Ibarrier(MPI_COMM_WORLD, &request);
  waitWithinTimeout(request,
                    [] { return std::string("the other ranks, at a checkpoint's barrier"); });
}

double averageOverWorld(double value) {
  int size = worldSize();
  if (size == 1)
    return value;
  double sum = 0.0;
  MPI_Request request;
  MPI_Iallreduce(&value, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &request);
  waitWithinTimeout(request, [] { return std::string("the sum of the ranks' losses"); });
  return sum / size;
}

bool waitWithinTimeout(MPI_Request &request, const std::function<std::string()> &describe,
                       std::mutex *lock) {
  using Clock = std::chrono::steady_clock;
  Clock::time_point begin = Clock::now();
  Milliseconds limit = currentStepLimit();
  for (;;) {
    {
      std::unique_lock<std::mutex> held;
      if (lock)
        held = std::unique_lock<std::mutex>(*lock);
      if (request == MPI_REQUEST_NULL)
        return false;
      int done = 0;
      MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      if (done)
        return true;
    }
    Clock::duration waited = Clock::now() - begin;
    if (waited > limit)
      fatalOnThisRank(timeoutMessage(
          currentStep(), describe(), std::chrono::duration_cast<Milliseconds>(waited), limit));
    // MPI_Wait would spin as well; the yield lets the progress thread in.
    std::this_thread::yield();
  }
}

std::vector<int64_t> gatherToRankZero(int64_t value) {
  int size = worldSize();
  if (size == 1)
    return {value};
  std::vector<int64_t> values(worldRank() == 0 ? static_cast<size_t>(size) : 0);
  MPI_Gather(&value, 1, MPI_INT64_T, values.data(), 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
  return values;
}

} // namespace fsdprt

extern "C" int32_t fsdprt_group_rank(int32_t group) { return fsdprt::groupRank(group); }
