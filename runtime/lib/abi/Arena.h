//===- Arena.h - The buffer every persistent tensor lives in ----*- C++ -*-===//
//
// One buffer of manifest.arena_bytes bytes, zero-filled and at least 64-byte
// aligned, owned by the runtime and passed to every step. It lives where the
// step runs: host memory on the CPU backend (lib/cpu/HostArena.cpp), device
// memory on the CUDA backend (lib/cuda/CudaArena.cpp); each archive holds one
// of the two definitions.
//
// The trainer reads and writes the arena through its host view: it writes
// the initial shards and each step's batch there and uploads those ranges,
// and downloads the ranges it reads (the transient part for the high-water
// mark, the parameter and state shards for --export and --save). On the CPU the host view is
// the arena itself and uploads and downloads do nothing.
//
// On the CUDA backend uploads and fills are asynchronous, on the compute
// stream (lib/cuda/CudaArena.cpp): the host view may be written again as soon
// as upload returns, the step's compute-stream work sees the bytes, and
// finishUploads (Device.h) waits for them all; a download returns once the
// bytes are in the host view, after the uploads and fills before it.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_ABI_ARENA_H
#define FSDPRT_ABI_ARENA_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fsdprt {

/// Bytes [offset, offset + count) of the arena.
struct ByteRange {
  int64_t offset = 0;
  int64_t count = 0;
};

class Arena {
public:
  /// Allocates and zero-fills `bytes` bytes (and its host view); failure to
  /// allocate is fatal.
  explicit Arena(size_t bytes);
  ~Arena();
  Arena(const Arena &) = delete;
  Arena &operator=(const Arena &) = delete;

  /// The arena as the step sees it (a device pointer on the CUDA backend).
  void *stepData() const { return step; }
  /// The host's copy of the arena, valid in the ranges last uploaded from it
  /// or downloaded to it.
  uint8_t *host() const { return hostView; }

  /// Copies [offset, offset + count) of the host view to the arena.
  void upload(int64_t offset, int64_t count);
  /// Copies each of `ranges` of the host view to the arena, as one upload:
  /// on the CUDA backend through one staging buffer when they fit in one,
  /// so that a step's inputs and scalars take one buffer of the two.
  void upload(const std::vector<ByteRange> &ranges);
  /// Copies [offset, offset + count) of the arena to the host view.
  void download(int64_t offset, int64_t count);
  /// Sets [offset, offset + count) of the arena (not of the host view) to `value`.
  void fill(int64_t offset, int64_t count, uint8_t value);

  /// The CUDA backend's page-locked buffers that uploads copy from.
  struct Staging;

private:
  void *step = nullptr;
  uint8_t *hostView = nullptr;
  size_t bytes = 0;
  Staging *staging = nullptr; // created by the first upload; none on the CPU
};

/// The host arena of `offload = optimizer` (manifest.host_arena_bytes): the
/// offloaded units' f32 master shards, optimizer state and gradients, which
/// the step's host code updates in place. Zero-filled and 64-byte aligned;
/// page-locked on the CUDA backend (cudaHostAlloc), so that its copies to
/// and from the device run asynchronously at the link's full speed. Empty
/// (null) without offload.
class HostArena {
public:
  explicit HostArena(size_t bytes);
  ~HostArena();
  HostArena(const HostArena &) = delete;
  HostArena &operator=(const HostArena &) = delete;

  uint8_t *data() const { return memory; }

private:
  uint8_t *memory = nullptr;
};

} // namespace fsdprt

#endif // FSDPRT_ABI_ARENA_H
