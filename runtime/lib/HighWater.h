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
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_HIGHWATER_H
#define FSDPRT_HIGHWATER_H

#include "Manifest.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fsdprt {

constexpr uint8_t kTransientMarker = 0xA5;

/// Fills [persistent_bytes, arena_bytes) of `arena` with kTransientMarker.
void markTransient(const Manifest &manifest, uint8_t *arena);

/// 1 + the index of the last byte that is not the marker, or persistent_bytes
/// if the step wrote none.
int64_t highWaterMark(const Manifest &manifest, const uint8_t *arena);

/// The line rank 0 prints: `arena: planned peak P bytes, measured high-water
/// mark M bytes on every rank`, or every rank's mark when they differ.
std::string arenaLine(int64_t planned, const std::vector<int64_t> &marks);

/// The last --log-json line: `{"planned_peak_bytes": P, "high_water_bytes": [...]}`.
std::string arenaJson(int64_t planned, const std::vector<int64_t> &marks);

} // namespace fsdprt

#endif // FSDPRT_HIGHWATER_H
