//===- Checkpoint.h - --save and --resume -----------------------*- C++ -*-===//
//
// A checkpoint is a directory `step-<k>` (docs/Runtime.md, section 8): one
// file per shard of the first replica, `shard-<i>-of-<n>.bin`, holding that
// rank's master parameter shard and optimizer state of every unit, and
// `metadata.json`, which rank 0 writes last: the format version, the model
// (each parameter's name, shape, dtype and unit, a fingerprint), the unit
// layout and where each region lies in the shard files, the plan, the step,
// the data position, the seed and the learning-rate schedule.
//
// Crash-safe: everything is written under `.step-<k>.partial`, each file
// fsync'ed, then the directory is renamed to `step-<k>` (atomic) and its
// parent fsync'ed. A run killed at any moment leaves the previous checkpoints
// and at most a partial directory, which --resume ignores. Older checkpoints
// beyond --keep are removed only after the new one is committed.
//
// Resume re-slices: each rank reads, by parameter, the elements of its own
// shards from whichever old shards hold them, so a checkpoint resumes at any
// number of ranks and under any strategy or unit grouping of the same model.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_IO_CHECKPOINT_H
#define FSDPRT_IO_CHECKPOINT_H

#include "abi/Arena.h"
#include "abi/Manifest.h"
#include "trainer/HostShards.h"
#include "trainer/LrSchedule.h"
#include "trainer/Ranks.h"

#include <cstdint>
#include <string>

namespace fsdprt {

/// Where training stands after a step: what a resumed run continues from.
struct TrainingPosition {
  int64_t step = 0;        // the last step done
  int64_t samplesSeen = 0; // global samples the steps so far consumed
  uint64_t seed = 0;       // initial values and the data's order
  LrSchedule schedule;
  std::string data;        // "synthetic" or the data file's name, for messages
};

/// Writes the checkpoint of `position` under `dir`, then removes all but the
/// `keep` newest committed ones (0: keeps all). Collective over the world:
/// the ranks of the first replica write their shards (downloaded from
/// `arena`, or read from `hostArena` for offloaded units).
void saveCheckpoint(const std::string &dir, const Manifest &manifest, const RankPlace &place,
                    Arena &arena, uint8_t *hostArena, const TrainingPosition &position,
                    int64_t keep);

/// Finds the checkpoint `dir` names (itself, or the newest committed one
/// under it), checks it against the model (every difference that keeps it
/// from resuming is one error naming it), reads this rank's parameter and
/// optimizer state shards into `shards` and returns its position. Every rank
/// reads it; errors are the same on every rank.
TrainingPosition loadCheckpoint(const std::string &dir, const Manifest &manifest,
                                const RankPlace &place, const HostShards &shards);

} // namespace fsdprt

#endif // FSDPRT_IO_CHECKPOINT_H
