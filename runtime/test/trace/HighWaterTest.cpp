//===- HighWaterTest.cpp - Measured peak of the arena's transient part ----===//

#include "trace/HighWater.h"

#include <gtest/gtest.h>

using namespace fsdprt;

namespace {

Manifest arenaOf(int64_t persistent, int64_t total) {
  Manifest manifest;
  manifest.persistentBytes = persistent;
  manifest.arenaBytes = total;
  return manifest;
}

TEST(HighWater, MarksOnlyTheTransientPart) {
  Manifest manifest = arenaOf(64, 256);
  Arena arena(256);
  markTransient(manifest, arena);
  for (int i = 0; i < 64; ++i)
    ASSERT_EQ(arena.host()[i], 0) << "persistent byte " << i;
  for (int i = 64; i < 256; ++i)
    ASSERT_EQ(arena.host()[i], kTransientMarker) << "transient byte " << i;
  // Untouched: the mark is the end of the persistent part.
  EXPECT_EQ(highWaterMark(manifest, arena), 64);
}

TEST(HighWater, TheLastByteWrittenIsTheMark) {
  Manifest manifest = arenaOf(64, 256);
  Arena arena(256);
  markTransient(manifest, arena);
  uint8_t *bytes = arena.host();
  bytes[70] = 0;
  EXPECT_EQ(highWaterMark(manifest, arena), 71);
  // A write of the marker value itself is invisible; the byte before counts.
  bytes[199] = 1;
  bytes[200] = kTransientMarker;
  EXPECT_EQ(highWaterMark(manifest, arena), 200);
  bytes[255] = 0;
  EXPECT_EQ(highWaterMark(manifest, arena), 256);
  // Persistent bytes never count.
  EXPECT_EQ(highWaterMark(arenaOf(256, 256), arena), 256);
}

TEST(HighWater, ScansWindowByWindowFromTheEnd) {
  Manifest manifest = arenaOf(64, 256);
  Arena arena(256);
  markTransient(manifest, arena);
  // Windows of 16 bytes: [240, 256), [224, 240), ..., [64, 80).
  for (int64_t last : {64, 79, 80, 81, 200, 255}) {
    arena.host()[last] = 0;
    EXPECT_EQ(highWaterMark(manifest, arena, 16), last + 1) << "last byte written " << last;
  }
  // A transient part that is not a whole number of windows.
  EXPECT_EQ(highWaterMark(arenaOf(60, 256), arena, 16), 256);
  markTransient(manifest, arena);
  EXPECT_EQ(highWaterMark(manifest, arena, 16), 64);
}

TEST(HighWater, Lines) {
  EXPECT_EQ(arenaLine(1344, {1344, 1344}),
            "arena: planned peak 1344 bytes, measured high-water mark 1344 bytes on every rank");
  EXPECT_EQ(arenaLine(1000, {900}),
            "arena: planned peak 1000 bytes, measured high-water mark 900 bytes on every rank");
  EXPECT_EQ(arenaLine(1000, {900, 1000, 950}),
            "arena: planned peak 1000 bytes, measured high-water marks 900, 1000, 950 bytes "
            "(ranks 0..2)");
  EXPECT_EQ(arenaJson(1000, {900, 1000}),
            "{\"planned_peak_bytes\": 1000, \"high_water_bytes\": [900, 1000]}");
}

} // namespace
