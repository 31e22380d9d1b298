//===- CollectivesMpiTest.cpp - The collectives on a 2 x 2 grid -----------===//
//
// Run under `mpiexec -n 4`: the world as a grid of 2 replicas x 2 shard
// ranks. Shard groups are ranks {0, 1} and {2, 3}, replica groups {0, 2} and
// {1, 3}. Then as 2 shard ranks x 2 tensor ranks (one replica): tensor groups
// {0, 1} and {2, 3}, shard groups {0, 2} and {1, 3}, replica groups single
// ranks. Then as 4 tensor ranks, whose bf16 sums add in rank order. Every
// value is a small integer or a power of two, so sums and averages are exact
// where their order does not matter.
// Prints one PASS line per rank; any difference is a fatal error (which
// stops every rank).
//
//===----------------------------------------------------------------------===//

#include "abi/Collectives.h"
#include "abi/DType.h"
#include "abi/Error.h"
#include "fsdprt/fsdprt.h"
#include "trainer/Ranks.h"

#include <cstdio>
#include <string>
#include <vector>

using namespace fsdprt;

static void expectEqual(const std::vector<float> &got, const std::vector<float> &want,
                        const char *what) {
  if (got == want)
    return;
  std::string text;
  for (size_t i = 0; i < got.size(); ++i)
    text += (i ? ", " : "") + std::to_string(got[i]) + " (want " + std::to_string(want[i]) + ")";
  fatal(std::string(what) + ": " + text);
}

/// bf16 values, widened (exactly) for comparing.
static std::vector<float> widened(const std::vector<uint16_t> &bits) {
  std::vector<float> values;
  for (uint16_t b : bits)
    values.push_back(bf16ToFloat(b));
  return values;
}

static std::vector<uint16_t> bf16Values(const std::vector<float> &values) {
  std::vector<uint16_t> bits;
  for (float v : values)
    bits.push_back(floatToBF16(v));
  return bits;
}

/// The groups of 2 shard ranks x 2 tensor ranks: each group's members, in
/// group-rank order, are the ranks its all-gather collects from.
static void checkTensorGrid() {
  RankPlace place = setUpGroups(2, 2);
  int rank = place.rank;
  if (place.tensorIndex != rank % 2 || place.dataIndex != rank / 2 ||
      place.shardIndex != rank / 2 || place.replicaIndex != 0)
    fatal("wrong place in the grid of 2 shard x 2 tensor ranks");
  struct Expected {
    int32_t group;
    std::vector<int> members;
  };
  int t = static_cast<int>(place.tensorIndex), d = static_cast<int>(place.dataIndex);
  if (fsdprt_group_rank(FSDPRT_GROUP_TENSOR) != t || fsdprt_group_rank(FSDPRT_GROUP_SHARD) != d ||
      fsdprt_group_rank(FSDPRT_GROUP_REPLICA) != 0 || fsdprt_group_rank(FSDPRT_GROUP_WORLD) != rank)
    fatal("fsdprt_group_rank: not this rank's index in its groups");
  for (const Expected &expected :
       {Expected{FSDPRT_GROUP_TENSOR, {2 * d, 2 * d + 1}}, Expected{FSDPRT_GROUP_SHARD, {t, t + 2}},
        Expected{FSDPRT_GROUP_REPLICA, {rank}}, Expected{FSDPRT_GROUP_WORLD, {0, 1, 2, 3}}}) {
    std::string what = "all-gather over " + groupName(expected.group) + " of 2 x 2 tensor ranks";
    float mine = 10.0f * rank;
    std::vector<float> full(expected.members.size(), -1), want;
    for (int member : expected.members)
      want.push_back(10.0f * member);
    fsdprt_wait(fsdprt_all_gather_start(&mine, full.data(), 4, expected.group));
    expectEqual(full, want, what.c_str());
  }
  // The tensor group's reductions: the sum of its two ranks, and a bf16 average.
  std::vector<float> partial = {float(rank), 1.0f};
  fsdprt_wait(fsdprt_all_reduce_start(partial.data(), 2, FSDPRT_DTYPE_F32, FSDPRT_REDUCE_SUM,
                                      FSDPRT_GROUP_TENSOR));
  expectEqual(partial, {float(4 * d + 1), 2.0f}, "all-reduce sum over the tensor group");
  std::vector<uint16_t> half(1);
  std::vector<uint16_t> both = bf16Values({float(rank), float(rank) + 1});
  fsdprt_wait(fsdprt_reduce_scatter_start(both.data(), half.data(), 1, FSDPRT_DTYPE_BF16,
                                          FSDPRT_REDUCE_AVG, FSDPRT_GROUP_TENSOR));
  // Block t of (r, r + 1) averaged over ranks 2 d and 2 d + 1.
  expectEqual(widened(half), {2.0f * d + t + 0.5f},
              "bf16 reduce-scatter avg over the tensor group");
}

/// Four tensor ranks: bf16 sums add the ranks' parts in rank order, each
/// addition rounded. Parts 1, 2^-8, 2^-8, 2^-8: in rank order each 1 + 2^-8
/// is a tie that rounds to even, 1; in any other grouping two 2^-8 meet first
/// and their 2^-7 moves the sum to 1 + 2^-7 (MPI's recursive doubling) or
/// more. The f32 sums of the same group are exact integers in any order.
static void checkFourTensorRanks() {
  RankPlace place = setUpGroups(1, 4);
  int rank = place.rank;
  if (place.tensorIndex != rank || fsdprt_group_rank(FSDPRT_GROUP_TENSOR) != rank)
    fatal("wrong place among 4 tensor ranks");
  float part = rank == 0 ? 1.0f : 0.00390625f;
  std::vector<uint16_t> sum = bf16Values({part, 2.0f});
  fsdprt_wait(fsdprt_all_reduce_start(sum.data(), 2, FSDPRT_DTYPE_BF16, FSDPRT_REDUCE_SUM,
                                      FSDPRT_GROUP_TENSOR));
  expectEqual(widened(sum), {1.0f, 8.0f}, "bf16 all-reduce sum over 4 tensor ranks, rank order");
  // Block b of every rank holds the same parts; each rank keeps its own.
  std::vector<uint16_t> blocks = bf16Values({part, part, part, part}), mine(1);
  fsdprt_wait(fsdprt_reduce_scatter_start(blocks.data(), mine.data(), 1, FSDPRT_DTYPE_BF16,
                                          FSDPRT_REDUCE_SUM, FSDPRT_GROUP_TENSOR));
  expectEqual(widened(mine), {1.0f}, "bf16 reduce-scatter sum over 4 tensor ranks, rank order");
  // The average divides the ordered sum: (0 + 2 + 4 + 6) / 4.
  float doubled = 2.0f * rank;
  std::vector<uint16_t> evens = bf16Values({doubled, doubled, doubled, doubled});
  fsdprt_wait(fsdprt_reduce_scatter_start(evens.data(), mine.data(), 1, FSDPRT_DTYPE_BF16,
                                          FSDPRT_REDUCE_AVG, FSDPRT_GROUP_TENSOR));
  expectEqual(widened(mine), {3.0f}, "bf16 reduce-scatter avg over 4 tensor ranks");
  std::vector<float> partial = {float(rank), 1.0f};
  fsdprt_wait(fsdprt_all_reduce_start(partial.data(), 2, FSDPRT_DTYPE_F32, FSDPRT_REDUCE_SUM,
                                      FSDPRT_GROUP_TENSOR));
  expectEqual(partial, {6.0f, 4.0f}, "f32 all-reduce sum over 4 tensor ranks");
}

int main() {
  startMpi();
  if (worldSize() != 4)
    fatal("run this test on 4 ranks");
  RankPlace place = setUpGroups(2);
  int rank = place.rank;
  // Members of this rank's groups, in group-rank order.
  std::vector<int> shardGroup = {int(place.replicaIndex) * 2, int(place.replicaIndex) * 2 + 1};
  std::vector<int> replicaGroup = {int(place.shardIndex), int(place.shardIndex) + 2};
  if (place.shardIndex != rank % 2 || place.replicaIndex != rank / 2)
    fatal("wrong place in the grid");

  // All-gather over the shard group: each rank contributes {10 r, 10 r + 1}.
  std::vector<float> shard = {10.0f * rank, 10.0f * rank + 1}, full(4, -1);
  std::vector<float> wantFull;
  for (int member : shardGroup)
    wantFull.insert(wantFull.end(), {10.0f * member, 10.0f * member + 1});
  fsdprt_wait(fsdprt_all_gather_start(shard.data(), full.data(), 8, FSDPRT_GROUP_SHARD));
  expectEqual(full, wantFull, "all-gather over the shard group");

  // The same gather in place: the shard already sits in its block of `full`.
  std::vector<float> inPlace(4, -1);
  inPlace[2 * place.shardIndex] = 10.0f * rank;
  inPlace[2 * place.shardIndex + 1] = 10.0f * rank + 1;
  fsdprt_wait(fsdprt_all_gather_start(inPlace.data() + 2 * place.shardIndex, inPlace.data(), 8,
                                      FSDPRT_GROUP_SHARD));
  expectEqual(inPlace, wantFull, "in-place all-gather");

  // Reduce-scatter over the replica group: full[2 g + i] = 100 r + 10 g + i;
  // group rank g keeps block g, summed (or averaged) over the members.
  std::vector<float> gradient(4);
  for (int g = 0; g < 2; ++g)
    for (int i = 0; i < 2; ++i)
      gradient[2 * g + i] = 100.0f * rank + 10.0f * g + i;
  int groupRank = static_cast<int>(place.replicaIndex);
  std::vector<float> wantSum(2, 0.0f);
  for (int member : replicaGroup)
    for (int i = 0; i < 2; ++i)
      wantSum[i] += 100.0f * member + 10.0f * groupRank + i;
  std::vector<float> sum(2), average(2);
  // Both pending at once, completed in the other order.
  int32_t first = fsdprt_reduce_scatter_start(gradient.data(), sum.data(), 2, FSDPRT_DTYPE_F32,
                                              FSDPRT_REDUCE_SUM, FSDPRT_GROUP_REPLICA);
  int32_t second = fsdprt_reduce_scatter_start(gradient.data(), average.data(), 2, FSDPRT_DTYPE_F32,
                                               FSDPRT_REDUCE_AVG, FSDPRT_GROUP_REPLICA);
  fsdprt_wait(second);
  fsdprt_wait(first);
  expectEqual(sum, wantSum, "reduce-scatter sum over the replica group");
  expectEqual(average, {wantSum[0] / 2, wantSum[1] / 2}, "reduce-scatter avg over the replica group");

  // All-reduce over the world and over the shard group.
  std::vector<float> world = {float(rank), 1.0f};
  fsdprt_wait(fsdprt_all_reduce_start(world.data(), 2, FSDPRT_DTYPE_F32, FSDPRT_REDUCE_SUM,
                                      FSDPRT_GROUP_WORLD));
  expectEqual(world, {6.0f, 4.0f}, "all-reduce sum over the world");
  std::vector<float> pair = {float(rank)};
  fsdprt_wait(fsdprt_all_reduce_start(pair.data(), 1, FSDPRT_DTYPE_F32, FSDPRT_REDUCE_AVG,
                                      FSDPRT_GROUP_SHARD));
  expectEqual(pair, {(shardGroup[0] + shardGroup[1]) / 2.0f}, "all-reduce avg over the shard group");

  // bf16 (MPI has no bfloat16: the runtime adds pairs in f32 and rounds each
  // sum). Over a shard group of 2, one addition: 1 + 2^-8 lies halfway
  // between bf16 neighbours 1 and 1 + 2^-7 and rounds to even, 1 (in f32 it
  // would stay 1.00390625); 3 + 3 is exact, and its average 3.
  bool firstOfPair = rank == shardGroup[0];
  std::vector<uint16_t> tie = bf16Values({firstOfPair ? 1.0f : 0.00390625f, 3.0f});
  fsdprt_wait(fsdprt_all_reduce_start(tie.data(), 2, FSDPRT_DTYPE_BF16, FSDPRT_REDUCE_SUM,
                                      FSDPRT_GROUP_SHARD));
  expectEqual(widened(tie), {1.0f, 6.0f}, "bf16 all-reduce sum over the shard group");
  std::vector<uint16_t> three = bf16Values({3.0f});
  fsdprt_wait(fsdprt_all_reduce_start(three.data(), 1, FSDPRT_DTYPE_BF16, FSDPRT_REDUCE_AVG,
                                      FSDPRT_GROUP_SHARD));
  expectEqual(widened(three), {3.0f}, "bf16 all-reduce avg over the shard group");
  // Reduce-scatter over the world, small integers (exact in any order):
  // full[b] = rank + b, block b summed is 6 + 4 b, averaged (6 + 4 b) / 4.
  std::vector<uint16_t> blocks = bf16Values({float(rank), rank + 1.0f, rank + 2.0f, rank + 3.0f});
  std::vector<uint16_t> blockSum(1), blockAverage(1);
  fsdprt_wait(fsdprt_reduce_scatter_start(blocks.data(), blockSum.data(), 1, FSDPRT_DTYPE_BF16,
                                          FSDPRT_REDUCE_SUM, FSDPRT_GROUP_WORLD));
  fsdprt_wait(fsdprt_reduce_scatter_start(blocks.data(), blockAverage.data(), 1, FSDPRT_DTYPE_BF16,
                                          FSDPRT_REDUCE_AVG, FSDPRT_GROUP_WORLD));
  expectEqual(widened(blockSum), {6.0f + 4.0f * rank}, "bf16 reduce-scatter sum over the world");
  expectEqual(widened(blockAverage), {(6.0f + 4.0f * rank) / 4.0f},
              "bf16 reduce-scatter avg over the world");

  // The runtime's own reductions.
  if (averageOverWorld(rank) != 1.5)
    fatal("averageOverWorld");
  std::vector<int64_t> gathered = gatherToRankZero(rank * 3);
  if (rank == 0 && gathered != std::vector<int64_t>{0, 3, 6, 9})
    fatal("gatherToRankZero");

  checkTensorGrid();
  checkFourTensorRanks();

  std::printf("PASS rank %d\n", rank);
  finishMpi();
  return 0;
}
