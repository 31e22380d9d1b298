//===- StateTrace.h - --trace-state: the state after every step -*- C++ -*-===//
//
// A trace holds one record before the first step and one after every step,
// each the whole training state gathered from the shards (docs/Runtime.md,
// section 5): every parameter, then every trainable parameter's gradient of
// that step, then every trainable parameter's optimizer state, slot by slot.
// Tests start an independent reference from each record and compare its next
// step with the trainer's (teacher forcing): a float32 trajectory drifts from
// a float64 one, but one step from the same state cannot.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_TRACE_STATETRACE_H
#define FSDPRT_TRACE_STATETRACE_H

#include "abi/Arena.h"
#include "abi/Manifest.h"
#include "trainer/Ranks.h"

namespace fsdprt {

class OutputFile;

/// Appends one record to `out` on rank 0 (null on the other ranks): downloads
/// this rank's parameter, gradient and optimizer state shards from `arena`
/// (an offloaded unit's are in `hostArena`) and gathers them. Collective over
/// the ranks of replica 0. `afterStep`: false for the record before the first
/// step, whose gradients are zero (a gradient shard is a buffer of the step,
/// which has not run yet).
void writeStateRecord(const Manifest &manifest, const RankPlace &place, Arena &arena,
                      uint8_t *hostArena, OutputFile *out, bool afterStep);

} // namespace fsdprt

#endif // FSDPRT_TRACE_STATETRACE_H
