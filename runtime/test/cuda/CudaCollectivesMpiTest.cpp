//===- CudaCollectivesMpiTest.cpp - The CUDA collectives on a 2 x 2 grid --===//
//
// Run under `mpiexec -n 4`, on the stand-ins of the CUDA runtime and NCCL
// (FakeCuda.cpp, FakeNccl.cpp): the world as a grid of 2 replicas x 2 shard
// ranks, shard groups {0, 1} and {2, 3}, replica groups {0, 2} and {1, 3};
// then as 2 shard ranks x 2 tensor ranks, tensor groups {0, 1} and {2, 3},
// shard groups {0, 2} and {1, 3}, replica groups single ranks. Each group has a communicator for
// the all-gather stream and another for the reduce-scatter stream, so that NCCL does not serialise
// a gather behind a reduction; each collective runs on its stream's communicator and moves the
// right bytes. Values are small integers: sums and averages are exact. Prints one PASS line per
// rank once every rank has passed; any difference is a fatal error (which stops every rank).
//
//===----------------------------------------------------------------------===//

#include "abi/Arena.h"
#include "abi/DType.h"
#include "abi/Device.h"
#include "abi/Error.h"
#include "cuda/FakeCuda.h"
#include "fsdprt/fsdprt.h"
#include "trainer/Ranks.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace fsdprt;

namespace {

void expect(bool holds, const std::string &what) {
  // fatal names the rank.
  if (!holds)
    fatal(what);
}

void expectValues(const float *got, const std::vector<float> &want,
                  const std::string &what) {
  for (size_t i = 0; i < want.size(); ++i)
    expect(got[i] == want[i], what + ": element " + std::to_string(i) + " is " +
                                  std::to_string(got[i]) + ", want " +
                                  std::to_string(want[i]));
}

/// The communicators ncclCommInitRank and then ncclCommSplit made, in order
/// (a split into groups of one rank makes none).
std::vector<std::string> madeCommunicators() {
  std::vector<std::string> made = fake_cuda::results("ncclCommInitRank");
  for (const std::string &split : fake_cuda::results("ncclCommSplit"))
    if (split != "none")
      made.push_back(split);
  return made;
}

/// The one logged call to `function`, after which the log is forgotten.
std::string onlyCall(const std::string &function) {
  std::vector<std::string> calls = fake_cuda::callsTo(function);
  expect(calls.size() == 1,
         "one " + function + " call, not " + std::to_string(calls.size()));
  fake_cuda::reset();
  return calls[0];
}

bool endsWith(const std::string &text, const std::string &end) {
  return text.size() >= end.size() &&
         text.compare(text.size() - end.size(), end.size(), end) == 0;
}

/// 2 replicas x 2 shard ranks.
void checkShardGrid() {
  RankPlace place = setUpGroups(2);
  int rank = place.rank;
  int shardRank = static_cast<int>(place.shardIndex);
  std::vector<int> shardGroup = {int(place.replicaIndex) * 2,
                                 int(place.replicaIndex) * 2 + 1};
  std::vector<int> replicaGroup = {shardRank, shardRank + 2};

  fake_cuda::reset();
  openDevice();
  fake_cuda::reset();
  connectDevice(place);
  // The world, its shard and replica splits (the all-gather stream's), then a
  // second communicator of each for the reduce-scatter stream.
  std::vector<std::string> comms = madeCommunicators();
  expect(comms.size() == 6,
         "6 communicators, not " + std::to_string(comms.size()));
  std::vector<std::string> distinct = comms;
  std::sort(distinct.begin(), distinct.end());
  expect(std::unique(distinct.begin(), distinct.end()) == distinct.end(),
         "distinct communicators");
  const std::string &shardGather = comms[1], &worldReduce = comms[3],
                    &shardReduce = comms[4], &replicaReduce = comms[5];
  std::string gatherStream =
      fake_cuda::handleName(fsdprt_stream(FSDPRT_STREAM_ALL_GATHER));
  std::string reduceStream =
      fake_cuda::handleName(fsdprt_stream(FSDPRT_STREAM_REDUCE_SCATTER));
  fake_cuda::reset();

  {
    // Freed before the device closes.
    Arena arena(256);
    auto *base = static_cast<uint8_t *>(arena.stepData());
    auto *floats = reinterpret_cast<float *>(base);

    // All-gather over the shard group: each rank gives {10 r, 10 r + 1}.
    floats[0] = 10.0f * rank;
    floats[1] = 10.0f * rank + 1;
    fsdprt_wait(
        fsdprt_all_gather_start(floats, floats + 4, 8, FSDPRT_GROUP_SHARD));
    expect(endsWith(onlyCall("ncclAllGather"),
                    shardGather + ", " + gatherStream + ")"),
           "the all-gather on the shard group's all-gather communicator and "
           "stream");
    std::vector<float> gathered;
    for (int member : shardGroup)
      gathered.insert(gathered.end(), {10.0f * member, 10.0f * member + 1});
    expectValues(floats + 4, gathered, "all-gather");

    // Reduce-scatter (sum) over the shard group: rank r gives 100 r + i.
    for (int i = 0; i < 4; ++i)
      floats[16 + i] = 100.0f * rank + i;
    fsdprt_wait(fsdprt_reduce_scatter_start(floats + 16, floats + 24, 2,
                                            FSDPRT_DTYPE_F32, FSDPRT_REDUCE_SUM,
                                            FSDPRT_GROUP_SHARD));
    expect(endsWith(onlyCall("ncclReduceScatter"),
                    shardReduce + ", " + reduceStream + ")"),
           "the reduce-scatter on the shard group's reduce-scatter "
           "communicator and stream");
    std::vector<float> sums(2, 0.0f);
    for (int member : shardGroup)
      for (int j = 0; j < 2; ++j)
        sums[j] += 100.0f * member + (2 * shardRank + j);
    expectValues(floats + 24, sums, "reduce-scatter");

    // All-reduce (average, bf16) over the replica group: rank r gives 2 r, 4 r.
    auto *bf16 = reinterpret_cast<uint16_t *>(base + 128);
    bf16[0] = floatToBF16(2.0f * rank);
    bf16[1] = floatToBF16(4.0f * rank);
    fsdprt_wait(fsdprt_all_reduce_start(
        bf16, 2, FSDPRT_DTYPE_BF16, FSDPRT_REDUCE_AVG, FSDPRT_GROUP_REPLICA));
    expect(endsWith(onlyCall("ncclAllReduce"),
                    replicaReduce + ", " + reduceStream + ")"),
           "the replica all-reduce on the replica group's reduce-scatter "
           "communicator and stream");
    float mean = (replicaGroup[0] + replicaGroup[1]) / 2.0f;
    float averaged[] = {bf16ToFloat(bf16[0]), bf16ToFloat(bf16[1])};
    expectValues(averaged, {2 * mean, 4 * mean}, "replica all-reduce");

    // All-reduce (sum) over the world: the gradient norm's.
    floats[32] = static_cast<float>(rank + 1);
    fsdprt_wait(fsdprt_all_reduce_start(floats + 32, 1, FSDPRT_DTYPE_F32,
                                        FSDPRT_REDUCE_SUM, FSDPRT_GROUP_WORLD));
    expect(endsWith(onlyCall("ncclAllReduce"),
                    worldReduce + ", " + reduceStream + ")"),
           "the world's all-reduce on its reduce-scatter communicator");
    expectValues(floats + 32, {10.0f}, "world all-reduce");
  }
  closeDevice();
  expect(fake_cuda::callsTo("ncclCommDestroy").size() == 6,
         "every communicator destroyed");
}

/// 2 shard ranks x 2 tensor ranks: the tensor group's communicator (the
/// replica groups are single ranks, without any), its collectives of every
/// kind on it and on the tensor stream.
void checkTensorGrid() {
  RankPlace place = setUpGroups(2, 2);
  int rank = place.rank, d = static_cast<int>(place.dataIndex),
      t = static_cast<int>(place.tensorIndex);
  fake_cuda::reset();
  openDevice();
  fake_cuda::reset();
  connectDevice(place);
  // The world, its shard and tensor splits, then a second of the world and
  // the shard group for the reduce-scatter stream: the tensor group's
  // collectives all run on the tensor stream, one communicator.
  std::vector<std::string> comms = madeCommunicators();
  expect(comms.size() == 5, "5 communicators, not " + std::to_string(comms.size()));
  const std::string &shardGather = comms[1], &tensorComm = comms[2];
  std::string gatherStream = fake_cuda::handleName(fsdprt_stream(FSDPRT_STREAM_ALL_GATHER));
  std::string tensorStream = fake_cuda::handleName(fsdprt_stream(FSDPRT_STREAM_TENSOR));
  fake_cuda::reset();
  {
    Arena arena(256);
    auto *floats = reinterpret_cast<float *>(arena.stepData());
    // All-gathers over the tensor group {2 d, 2 d + 1} and the shard group
    // {t, t + 2}: each rank gives 10 r.
    floats[0] = 10.0f * rank;
    fsdprt_wait(fsdprt_all_gather_start(floats, floats + 4, 4, FSDPRT_GROUP_TENSOR));
    expect(endsWith(onlyCall("ncclAllGather"), tensorComm + ", " + tensorStream + ")"),
           "the all-gather on the tensor group's communicator and the tensor stream");
    expectValues(floats + 4, {20.0f * d, 20.0f * d + 10}, "tensor all-gather");
    fsdprt_wait(fsdprt_all_gather_start(floats, floats + 8, 4, FSDPRT_GROUP_SHARD));
    expect(endsWith(onlyCall("ncclAllGather"), shardGather + ", " + gatherStream + ")"),
           "the all-gather on the shard group's all-gather communicator");
    expectValues(floats + 8, {10.0f * t, 10.0f * t + 20}, "shard all-gather");
    // All-reduce (sum) over the tensor group: a product's partial sums.
    floats[16] = static_cast<float>(rank);
    floats[17] = 1.0f;
    fsdprt_wait(fsdprt_all_reduce_start(floats + 16, 2, FSDPRT_DTYPE_F32, FSDPRT_REDUCE_SUM,
                                        FSDPRT_GROUP_TENSOR));
    expect(endsWith(onlyCall("ncclAllReduce"), tensorComm + ", " + tensorStream + ")"),
           "the tensor all-reduce on the tensor group's communicator and the tensor stream");
    expectValues(floats + 16, {4.0f * d + 1, 2.0f}, "tensor all-reduce");
    // Reduce-scatter (sum) over the tensor group: sequence blocks.
    floats[32] = static_cast<float>(rank);
    floats[33] = 1.0f;
    fsdprt_wait(fsdprt_reduce_scatter_start(floats + 32, floats + 40, 1, FSDPRT_DTYPE_F32,
                                            FSDPRT_REDUCE_SUM, FSDPRT_GROUP_TENSOR));
    expect(endsWith(onlyCall("ncclReduceScatter"), tensorComm + ", " + tensorStream + ")"),
           "the tensor reduce-scatter on the tensor group's communicator and the tensor stream");
    expectValues(floats + 40, {t == 0 ? 4.0f * d + 1 : 2.0f}, "tensor reduce-scatter");
    // The replica group of one rank: no communication.
    fsdprt_wait(fsdprt_all_reduce_start(floats + 16, 2, FSDPRT_DTYPE_F32, FSDPRT_REDUCE_SUM,
                                        FSDPRT_GROUP_REPLICA));
    expect(fake_cuda::callsTo("ncclAllReduce").empty(), "no all-reduce over a replica of one");
  }
  closeDevice();
  expect(fake_cuda::callsTo("ncclCommDestroy").size() == 5, "every communicator destroyed");
}

} // namespace

int main() {
  startMpi();
  if (worldSize() != 4)
    fatal("run this test on 4 ranks");
  checkShardGrid();
  checkTensorGrid();
  waitForEveryRank();
  std::printf("PASS rank %d\n", worldRank());
  std::fflush(stdout);
  finishMpi();
  return 0;
}
