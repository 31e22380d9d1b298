//===- HostParallel.cpp - Elementwise work on the host's cores ------------===//
//
// The pool of HostParallel.h, and fsdprt_host_parallel (fsdprt.h;
// docs/Offload.md) on it: the step hands the runtime one of its generated
// update functions and the number of elements of the shard.
//
//===----------------------------------------------------------------------===//

#include "trainer/HostParallel.h"

#include "abi/Error.h"
#include "fsdprt/fsdprt.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

/// A positive integer from the environment variable `name`, if set; a value
/// that is not one is an error naming it.
int64_t positiveFromEnvironment(const char *name, bool required) {
  const char *text = std::getenv(name);
  if (!text || !*text)
    return 0;
  char *end = nullptr;
  long long value = std::strtoll(text, &end, 10);
  if (*end != '\0' || value < 1) {
    if (required)
      fsdprt::fatal(std::string(name) + "=" + text + ": expected a positive number of threads");
    return 0;
  }
  return value;
}

int64_t defaultThreads() {
  if (int64_t threads = positiveFromEnvironment("FSDPRT_HOST_THREADS", true))
    return threads;
  int64_t ranksOnNode = 1;
  for (const char *name :
       {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"})
    if (int64_t ranks = positiveFromEnvironment(name, false)) {
      ranksOnNode = ranks;
      break;
    }
  int64_t hardware = std::max<int64_t>(1, std::thread::hardware_concurrency());
  return std::max<int64_t>(1, hardware / ranksOnNode);
}

class HostThreads {
public:
  explicit HostThreads(int64_t count) {
    for (int64_t i = 1; i < count; ++i)
      workers.emplace_back([this] { work(); });
  }
  // The process may exit with the pool alive (a fatal error): never destroyed.

  int64_t size() const { return static_cast<int64_t>(workers.size()) + 1; }

  void run(int64_t count, int64_t minChunk, const std::function<void(int64_t, int64_t)> &body) {
    int64_t chunk = std::max(minChunk, (count + 4 * size() - 1) / (4 * size()));
    chunk = (chunk + 63) / 64 * 64;
    // One job at a time: the pool's callers (the trainer's thread) never overlap.
    std::lock_guard<std::mutex> one(running);
    {
      std::lock_guard<std::mutex> lock(mutex);
      job = Job{&body, count, chunk};
      next.store(0);
      unfinished = (count + chunk - 1) / chunk;
      ++generation;
    }
    wake.notify_all();
    runChunks();
    std::unique_lock<std::mutex> lock(mutex);
    finished.wait(lock, [this] { return unfinished == 0; });
  }

private:
  struct Job {
    const std::function<void(int64_t, int64_t)> *body = nullptr;
    int64_t count = 0, chunk = 1;
  };

  /// Takes chunks of the current job until none is left.
  void runChunks() {
    Job current;
    {
      std::lock_guard<std::mutex> lock(mutex);
      current = job;
    }
    int64_t done = 0;
    for (;;) {
      int64_t begin = next.fetch_add(current.chunk);
      if (begin >= current.count)
        break;
      (*current.body)(begin, std::min(current.count, begin + current.chunk));
      ++done;
    }
    if (done == 0)
      return;
    std::lock_guard<std::mutex> lock(mutex);
    unfinished -= done;
    if (unfinished == 0)
      finished.notify_all();
  }

  void work() {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex);
        wake.wait(lock, [&] { return generation != seen; });
        seen = generation;
      }
      runChunks();
    }
  }

  std::vector<std::thread> workers;
  std::mutex running, mutex;
  std::condition_variable wake, finished;
  Job job;
  std::atomic<int64_t> next{0};
  int64_t unfinished = 0;
  uint64_t generation = 0;
};

} // namespace

void fsdprt::parallelChunks(int64_t count, int64_t minChunk,
                            const std::function<void(int64_t, int64_t)> &body) {
  // Made at the first call, small or not: a wrong FSDPRT_HOST_THREADS is an
  // error whatever the range.
  static HostThreads *pool = new HostThreads(defaultThreads());
  if (count <= 0)
    return;
  if (count <= minChunk) {
    body(0, count);
    return;
  }
  pool->run(count, minChunk, body);
}

/// Elements per chunk of an update at least: a few hundred KiB of each operand.
constexpr int64_t kMinUpdateChunk = 1 << 16;

extern "C" void fsdprt_host_parallel(fsdprt_host_task task, void *host_arena, float lr,
                                     int64_t step, float coefficient, int64_t count) {
  if (!task)
    fsdprt::fatal("fsdprt_host_parallel: no task");
  if (count < 0)
    fsdprt::fatal("fsdprt_host_parallel: negative size " + std::to_string(count));
  fsdprt::parallelChunks(count, kMinUpdateChunk, [&](int64_t begin, int64_t end) {
    task(host_arena, lr, step, coefficient, begin, end);
  });
}
