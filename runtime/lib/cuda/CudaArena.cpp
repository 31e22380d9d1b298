//===- CudaArena.cpp - The arena in device memory -------------------------===//
//
// One cudaMalloc (256-byte aligned), zero-filled on the device. The host view
// is an anonymous mapping of the same size: the kernel gives it pages only
// where the trainer writes or downloads (the parameter shards, the inputs,
// the end of the transient part), so it costs no host memory for the
// activations and is not counted as heap in use.
//
// Uploads and fills are asynchronous, on the compute stream, so that loading
// a step's batch does not stall the host on the device: the step's kernels
// and products run on that stream too, after the copies, with no host wait.
// A copy is only asynchronous from page-locked memory (from pageable memory
// CUDA stages it before returning), and the host view is pageable: an upload
// copies its bytes into one of two page-locked staging buffers, used in
// turn, and the device copies from there. The host writes a staging buffer
// again only once the event recorded after the last copy from it has
// passed, which by then is long done except within one burst of uploads
// (the start-up's shards, pipelined a chunk at a time).
//
// A step's inputs and device scalars go as one upload through one staging
// buffer (BatchSource.cpp): with the two buffers taking turns step by step,
// the host refills a buffer only after a copy enqueued before the step two
// steps back, which the trainer has already waited for (it reads a step's
// loss once the next step is enqueued). Split over both buffers, the next
// step's last upload would wait for the previous step's whole work.
//
// What orders the uploads before their readers:
// - the step's inputs and scalars (each step and each evaluation batch) are
//   read by the step's work, which starts after the copies: every stream of
//   the step waits for an event the step records on the compute stream
//   first (enqueueStep, lib/cuda/StepGraph.cpp), and the step before joined
//   back into the compute stream, before the copies, so none of its streams
//   still reads or writes those bytes;
// - the start-up's uploads (parameter shards, a resumed run's state) and the
//   marker fill of the transient part (HighWater.cpp) are also touched by
//   the collective streams (the all-gathers read the shards and write the
//   transient part), which nothing orders after the compute stream: the
//   trainer waits for the device once, at the end of its start-up
//   (finishUploads, Device.h);
// - a download (for --export, --save, --trace-state and the high-water mark)
//   is on the compute stream, after every upload and fill, and the host
//   waits for it; after a step, finishStep has waited for every stream.
//   (The step's loss goes through a ring of its own: lib/cuda/LossCopies.cpp.)
//
//===----------------------------------------------------------------------===//

#include "abi/Arena.h"

#include "abi/Error.h"
#include "cuda/CudaCheck.h"
#include "cuda/CudaDevice.h"
#include "fsdprt/fsdprt.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sys/mman.h>

namespace fsdprt {

/// The page-locked buffers uploads copy from, used in turn: while the device
/// copies from one, the host fills the other.
struct Arena::Staging {
  struct Buffer {
    uint8_t *memory = nullptr;
    size_t capacity = 0;
    /// Recorded on the compute stream after the last copy from the buffer.
    cudaEvent_t copied = nullptr;
  };
  Buffer buffers[2];
  size_t next = 0;
};

/// The most an upload copies through a staging buffer at once: a larger one
/// (a parameter shard) goes in chunks, so that the staging buffers stay small.
static constexpr size_t kStagingChunkBytes = size_t(16) << 20;

/// Bytes allocated for an arena of `bytes`: an empty arena still passes a
/// valid pointer to the step.
static size_t allocatedBytes(size_t bytes) { return std::max<size_t>(bytes, 1); }

static cudaStream_t computeStream(const char *what) {
  return deviceStream(what, FSDPRT_STREAM_COMPUTE);
}

Arena::Arena(size_t bytes) : bytes(bytes) {
  const CudaDevice &device = openedDevice("the arena");
  size_t allocated = allocatedBytes(bytes);
  // The likeliest error of all (the plan does not fit the GPU) gets a
  // sentence of its own.
  cudaError_t status = cudaMalloc(&step, allocated);
  if (status != cudaSuccess)
    fatal("cannot allocate the arena of " + std::to_string(bytes) + " bytes on CUDA device " +
          std::to_string(device.ordinal) + ": " + cudaGetErrorString(status));
  FSDPRT_CUDA_CHECK(cudaMemset(step, 0, allocated));
  void *mapped = mmap(nullptr, allocated, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mapped == MAP_FAILED)
    fatal("cannot map the host copy of the arena of " + std::to_string(bytes) +
          " bytes: " + std::strerror(errno));
  hostView = static_cast<uint8_t *>(mapped);
  // cudaMemset runs on the legacy default stream, which the step's streams
  // do not wait for, and may return before it is done: the zeros must be
  // there before anything else touches the arena.
  FSDPRT_CUDA_CHECK(cudaDeviceSynchronize());
}

Arena::~Arena() {
  if (staging) {
    for (Staging::Buffer &buffer : staging->buffers) {
      if (buffer.copied) {
        FSDPRT_CUDA_CHECK(cudaEventSynchronize(buffer.copied));
        FSDPRT_CUDA_CHECK(cudaEventDestroy(buffer.copied));
      }
      if (buffer.memory)
        FSDPRT_CUDA_CHECK(cudaFreeHost(buffer.memory));
    }
    delete staging;
  }
  munmap(hostView, allocatedBytes(bytes));
  FSDPRT_CUDA_CHECK(cudaFree(step));
}

HostArena::HostArena(size_t bytes) {
  if (bytes == 0)
    return;
  openedDevice("the host arena");
  void *pinned = nullptr;
  cudaError_t status = cudaHostAlloc(&pinned, bytes, cudaHostAllocDefault);
  if (status != cudaSuccess)
    fatal("cannot allocate the page-locked host arena of " + std::to_string(bytes) +
          " bytes (offload = optimizer): " + cudaGetErrorString(status));
  memory = static_cast<uint8_t *>(pinned);
  std::memset(memory, 0, bytes);
}

HostArena::~HostArena() {
  if (memory)
    FSDPRT_CUDA_CHECK(cudaFreeHost(memory));
}

/// The staging buffer to fill next with `bytes` (at most kStagingChunkBytes),
/// once no copy reads it any more: grown (doubling, up to a chunk) when it
/// is too small.
static Arena::Staging::Buffer &takeStaging(Arena::Staging &staging, size_t bytes) {
  Arena::Staging::Buffer &buffer = staging.buffers[staging.next];
  staging.next = 1 - staging.next;
  if (buffer.copied)
    FSDPRT_CUDA_CHECK(cudaEventSynchronize(buffer.copied));
  if (buffer.capacity < bytes) {
    if (buffer.memory)
      FSDPRT_CUDA_CHECK(cudaFreeHost(buffer.memory));
    buffer.memory = nullptr;
    size_t capacity = std::min(kStagingChunkBytes, std::max(bytes, 2 * buffer.capacity));
    void *pinned = nullptr;
    cudaError_t status = cudaHostAlloc(&pinned, capacity, cudaHostAllocDefault);
    if (status != cudaSuccess)
      fatal("cannot allocate " + std::to_string(capacity) +
            " bytes of page-locked staging memory for the arena's uploads: " +
            cudaGetErrorString(status));
    buffer.memory = static_cast<uint8_t *>(pinned);
    buffer.capacity = capacity;
  }
  return buffer;
}

void Arena::upload(int64_t offset, int64_t count) {
  cudaStream_t compute = computeStream("the arena's upload");
  if (!staging)
    staging = new Staging;
  for (size_t done = 0, total = static_cast<size_t>(count); done < total;) {
    size_t chunk = std::min(total - done, kStagingChunkBytes);
    Staging::Buffer &buffer = takeStaging(*staging, chunk);
    size_t at = static_cast<size_t>(offset) + done;
    std::memcpy(buffer.memory, hostView + at, chunk);
    FSDPRT_CUDA_CHECK(cudaMemcpyAsync(static_cast<uint8_t *>(step) + at, buffer.memory, chunk,
                                      cudaMemcpyHostToDevice, compute));
    recordEvent(buffer.copied, compute);
    done += chunk;
  }
}

void Arena::upload(const std::vector<ByteRange> &ranges) {
  size_t total = 0;
  for (const ByteRange &range : ranges)
    total += static_cast<size_t>(range.count);
  if (total > kStagingChunkBytes) {
    for (const ByteRange &range : ranges)
      upload(range.offset, range.count);
    return;
  }
  if (total == 0)
    return;
  cudaStream_t compute = computeStream("the arena's upload");
  if (!staging)
    staging = new Staging;
  Staging::Buffer &buffer = takeStaging(*staging, total);
  // The ranges lie back to back in the buffer: one copy for each run of
  // ranges that are adjacent in the arena too.
  size_t packed = 0, runStart = 0;
  int64_t runOffset = 0;
  auto copyRun = [&] {
    if (packed > runStart)
      FSDPRT_CUDA_CHECK(cudaMemcpyAsync(static_cast<uint8_t *>(step) + runOffset,
                                        buffer.memory + runStart, packed - runStart,
                                        cudaMemcpyHostToDevice, compute));
  };
  for (const ByteRange &range : ranges) {
    if (range.count == 0)
      continue;
    if (runOffset + static_cast<int64_t>(packed - runStart) != range.offset) {
      copyRun();
      runStart = packed;
      runOffset = range.offset;
    }
    std::memcpy(buffer.memory + packed, hostView + range.offset, static_cast<size_t>(range.count));
    packed += static_cast<size_t>(range.count);
  }
  copyRun();
  recordEvent(buffer.copied, compute);
}

void Arena::download(int64_t offset, int64_t count) {
  cudaStream_t compute = computeStream("the arena's download");
  FSDPRT_CUDA_CHECK(cudaMemcpyAsync(hostView + offset, static_cast<uint8_t *>(step) + offset,
                                    static_cast<size_t>(count), cudaMemcpyDeviceToHost, compute));
  FSDPRT_CUDA_CHECK(cudaStreamSynchronize(compute));
}

void Arena::fill(int64_t offset, int64_t count, uint8_t value) {
  FSDPRT_CUDA_CHECK(cudaMemsetAsync(static_cast<uint8_t *>(step) + offset, value,
                                    static_cast<size_t>(count), computeStream("the arena's fill")));
}

} // namespace fsdprt
