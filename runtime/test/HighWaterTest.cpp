//===- HighWaterTest.cpp - Measured peak of the arena's transient part ----===//

#include "HighWater.h"

#include <gtest/gtest.h>

#include <vector>

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
  std::vector<uint8_t> arena(256, 0);
  markTransient(manifest, arena.data());
  for (int i = 0; i < 64; ++i)
    ASSERT_EQ(arena[i], 0) << "persistent byte " << i;
  for (int i = 64; i < 256; ++i)
    ASSERT_EQ(arena[i], kTransientMarker) << "transient byte " << i;
  // Untouched: the mark is the end of the persistent part.
  EXPECT_EQ(highWaterMark(manifest, arena.data()), 64);
}

TEST(HighWater, TheLastByteWrittenIsTheMark) {
  Manifest manifest = arenaOf(64, 256);
  std::vector<uint8_t> arena(256, 0);
  markTransient(manifest, arena.data());
  arena[70] = 0;
  EXPECT_EQ(highWaterMark(manifest, arena.data()), 71);
  // A write of the marker value itself is invisible; the byte before counts.
  arena[199] = 1;
  arena[200] = kTransientMarker;
  EXPECT_EQ(highWaterMark(manifest, arena.data()), 200);
  arena[255] = 0;
  EXPECT_EQ(highWaterMark(manifest, arena.data()), 256);
  // Persistent bytes never count.
  EXPECT_EQ(highWaterMark(arenaOf(256, 256), arena.data()), 256);
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
