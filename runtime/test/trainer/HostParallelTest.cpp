//===- HostParallelTest.cpp - Elementwise work on the host's threads -----===//
//
// parallelChunks (lib/trainer/HostParallel.h), and fsdprt_host_parallel on it, which
// runs the compiler's update task, cover [0, count) in chunks: every element
// exactly once, chunks starting on a multiple of 64 elements, on several
// threads when it has them. Each test runs
// in a process of its own (gtest_discover_tests), so FSDPRT_HOST_THREADS set at
// its start sizes the pool it creates.
//
//===----------------------------------------------------------------------===//

#include "fsdprt/fsdprt.h"
#include "trainer/HostParallel.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

using testing::ExitedWithCode;
using testing::HasSubstr;

namespace {

struct Calls {
  std::mutex mutex;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  std::set<std::thread::id> threads;
  float lr = 0, coefficient = 0;
  int64_t step = 0;
};

/// The task: records its range and thread, and marks its elements (through
/// the host arena, as the compiler's task writes it).
void recordingTask(void *hostArena, float lr, int64_t step, float coefficient, int64_t begin,
                   int64_t end) {
  auto *calls = static_cast<Calls *>(hostArena);
  {
    std::lock_guard<std::mutex> lock(calls->mutex);
    calls->ranges.emplace_back(begin, end);
    calls->threads.insert(std::this_thread::get_id());
    calls->lr = lr;
    calls->step = step;
    calls->coefficient = coefficient;
  }
  // Long enough that idle threads take the other chunks.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

/// Whether `ranges` cover [0, count) exactly once, each chunk starting on a
/// multiple of 64.
bool coverOnce(std::vector<std::pair<int64_t, int64_t>> ranges, int64_t count) {
  std::sort(ranges.begin(), ranges.end());
  int64_t next = 0;
  for (auto [begin, end] : ranges) {
    if (begin != next || end <= begin || begin % 64 != 0)
      return false;
    next = end;
  }
  return next == count;
}

TEST(HostParallel, CoversTheRangeOnceInChunksOnSeveralThreads) {
  setenv("FSDPRT_HOST_THREADS", "4", 1);
  Calls calls;
  int64_t count = 3 * 65536 * 4 + 17; // more chunks than threads, a partial last one
  fsdprt_host_parallel(recordingTask, &calls, 0.25f, 7, 0.5f, count);
  EXPECT_TRUE(coverOnce(calls.ranges, count));
  EXPECT_GT(calls.ranges.size(), 4u);
  EXPECT_GT(calls.threads.size(), 1u) << "the pool's threads take chunks too";
  EXPECT_EQ(calls.lr, 0.25f);
  EXPECT_EQ(calls.step, 7);
  EXPECT_EQ(calls.coefficient, 0.5f);
  // The pool serves the next update as well.
  calls.ranges.clear();
  fsdprt_host_parallel(recordingTask, &calls, 0.25f, 8, 1.0f, 100);
  EXPECT_TRUE(coverOnce(calls.ranges, 100));
  EXPECT_EQ(calls.ranges.size(), 1u) << "a small shard is one chunk";
}

TEST(HostParallel, ChunksOfTheGenericPoolAreAtLeastTheMinimum) {
  setenv("FSDPRT_HOST_THREADS", "3", 1);
  std::mutex mutex;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  std::set<std::thread::id> threads;
  auto record = [&](int64_t begin, int64_t end) {
    std::lock_guard<std::mutex> lock(mutex);
    ranges.emplace_back(begin, end);
    threads.insert(std::this_thread::get_id());
  };
  int64_t count = 10000, minChunk = 1000;
  fsdprt::parallelChunks(count, minChunk, [&](int64_t begin, int64_t end) {
    record(begin, end);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  });
  EXPECT_TRUE(coverOnce(ranges, count));
  for (auto [begin, end] : ranges)
    EXPECT_TRUE(end - begin >= minChunk || end == count) << begin << ".." << end;
  EXPECT_GT(threads.size(), 1u);
  // A range of at most one chunk runs on the calling thread.
  ranges.clear();
  threads.clear();
  fsdprt::parallelChunks(minChunk, minChunk, record);
  EXPECT_EQ(ranges, (std::vector<std::pair<int64_t, int64_t>>{{0, minChunk}}));
  EXPECT_EQ(threads, std::set<std::thread::id>{std::this_thread::get_id()});
}

TEST(HostParallel, NothingToDo) {
  Calls calls;
  fsdprt_host_parallel(recordingTask, &calls, 0.1f, 1, 1.0f, 0);
  EXPECT_TRUE(calls.ranges.empty());
}

TEST(HostParallelError, BadArguments) {
  Calls calls;
  EXPECT_EXIT(fsdprt_host_parallel(recordingTask, &calls, 0.1f, 1, 1.0f, -1), ExitedWithCode(1),
              HasSubstr("trainer: error: fsdprt_host_parallel: negative size -1"));
  EXPECT_EXIT(fsdprt_host_parallel(nullptr, &calls, 0.1f, 1, 1.0f, 10), ExitedWithCode(1),
              HasSubstr("trainer: error: fsdprt_host_parallel: no task"));
}

TEST(HostParallelError, ThreadsFromTheEnvironment) {
  setenv("FSDPRT_HOST_THREADS", "many", 1);
  Calls calls;
  EXPECT_EXIT(fsdprt_host_parallel(recordingTask, &calls, 0.1f, 1, 1.0f, 10), ExitedWithCode(1),
              HasSubstr("FSDPRT_HOST_THREADS=many: expected a positive number of threads"));
}

} // namespace
