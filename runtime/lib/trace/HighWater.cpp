//===- HighWater.cpp - Measured peak of the arena's transient part --------===//

#include "trace/HighWater.h"

#include <algorithm>

namespace fsdprt {

void markTransient(const Manifest &manifest, Arena &arena) {
  arena.fill(manifest.persistentBytes, manifest.arenaBytes - manifest.persistentBytes,
             kTransientMarker);
}

int64_t highWaterMark(const Manifest &manifest, Arena &arena, int64_t windowBytes) {
  const uint8_t *bytes = arena.host();
  for (int64_t end = manifest.arenaBytes; end > manifest.persistentBytes;) {
    int64_t begin = std::max(manifest.persistentBytes, end - windowBytes);
    arena.download(begin, end - begin);
    for (int64_t i = end; i > begin; --i)
      if (bytes[i - 1] != kTransientMarker)
        return i;
    end = begin;
  }
  return manifest.persistentBytes;
}

static std::string joined(const std::vector<int64_t> &values) {
  std::string text;
  for (size_t i = 0; i < values.size(); ++i)
    text += (i ? ", " : "") + std::to_string(values[i]);
  return text;
}

std::string arenaLine(int64_t planned, const std::vector<int64_t> &marks) {
  std::string line = "arena: planned peak " + std::to_string(planned) + " bytes, ";
  bool agree = std::all_of(marks.begin(), marks.end(), [&](int64_t m) { return m == marks[0]; });
  if (agree)
    return line + "measured high-water mark " + std::to_string(marks[0]) + " bytes on every rank";
  return line + "measured high-water marks " + joined(marks) + " bytes (ranks 0.." +
         std::to_string(marks.size() - 1) + ")";
}

std::string arenaJson(int64_t planned, const std::vector<int64_t> &marks) {
  return "{\"planned_peak_bytes\": " + std::to_string(planned) + ", \"high_water_bytes\": [" +
         joined(marks) + "]}";
}

std::string StepHighWater::traceMember() const {
  return "\"arena_high_water\":{\"step\":" + std::to_string(step) +
         ",\"persistent_bytes\":" + std::to_string(persistentBytes) +
         ",\"arena_bytes\":" + std::to_string(arenaBytes) + ",\"after_gather_waits\":[" +
         joined(afterGatherWaits) + "],\"end_of_step\":" + std::to_string(endOfStep) + "}";
}

} // namespace fsdprt
