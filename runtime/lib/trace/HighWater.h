//===- HighWater.h - Measured peak of the arena's transient part -*- C++ -*-===//
//
// The compiler plans the step's transient buffers into [persistent_bytes,
// arena_bytes); the trainer checks how much of it a run really touched
// (docs/Runtime.md, section 5). Before the first step the transient part is
// filled with a marker byte; after the last, the last byte that is no longer
// the marker gives the high-water mark. A step that writes a marker byte as
// its last value would read low, by chance; one that writes past its plan
// cannot, since everything up to arena_bytes is inside the arena.
//
// On the CUDA backend the marker is set on the device and the scan reads the
// device's bytes back, from the end, a window at a time: a plan that fits
// rarely needs more than the last window.
//
// With --trace the CPU trainer also scans during step 1, after each
// all-gather's wait (where compute receives a unit) and at the step's end:
// the marker is not laid again, so each scan is the top of what the step has
// written so far, which fsdpc --measured-trace draws beside the plan's
// (docs/CostModel.md, section 4).
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_TRACE_HIGHWATER_H
#define FSDPRT_TRACE_HIGHWATER_H

#include "abi/Arena.h"
#include "abi/Manifest.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fsdprt {

constexpr uint8_t kTransientMarker = 0xA5;

/// The bytes the high-water scan downloads at a time.
constexpr int64_t kHighWaterWindowBytes = int64_t(64) << 20;

/// Fills [persistent_bytes, arena_bytes) of `arena` with kTransientMarker.
void markTransient(const Manifest &manifest, Arena &arena);

/// 1 + the index of the last byte that is not the marker, or persistent_bytes
/// if the step wrote none; reads the arena back `windowBytes` at a time.
int64_t highWaterMark(const Manifest &manifest, Arena &arena,
                      int64_t windowBytes = kHighWaterWindowBytes);

/// The line rank 0 prints: `arena: planned peak P bytes, measured high-water
/// mark M bytes on every rank`, or every rank's mark when they differ.
std::string arenaLine(int64_t planned, const std::vector<int64_t> &marks);

/// The last --log-json line: `{"planned_peak_bytes": P, "high_water_bytes": [...]}`.
std::string arenaJson(int64_t planned, const std::vector<int64_t> &marks);

/// The high-water marks of one step at its unit boundaries.
struct StepHighWater {
  int64_t step = 0;
  int64_t persistentBytes = 0, arenaBytes = 0;
  /// After each all-gather's wait, in the step's order.
  std::vector<int64_t> afterGatherWaits;
  int64_t endOfStep = 0;

  /// The member of the --trace JSON: `"arena_high_water":{"step":1,
  /// "persistent_bytes":P,"arena_bytes":A,"after_gather_waits":[...],
  /// "end_of_step":E}`.
  std::string traceMember() const;
};

} // namespace fsdprt

#endif // FSDPRT_TRACE_HIGHWATER_H
