//===- CudaArena.cpp - The arena in device memory -------------------------===//
//
// One cudaMalloc (256-byte aligned), zero-filled on the device. The host view
// is an anonymous mapping of the same size: the kernel gives it pages only
// where the trainer writes or downloads (the parameter shards, the inputs,
// the end of the transient part), so it costs no host memory for the
// activations and is not counted as heap in use.
//
//===----------------------------------------------------------------------===//

#include "Arena.h"

#include "CudaCheck.h"
#include "CudaDevice.h"
#include "Error.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sys/mman.h>

namespace fsdprt {

/// Bytes allocated for an arena of `bytes`: an empty arena still passes a
/// valid pointer to the step.
static size_t allocatedBytes(size_t bytes) { return std::max<size_t>(bytes, 1); }

/// The step's streams do not wait for the legacy default stream that
/// cudaMemcpy and cudaMemset use, and cudaMemset returns before it is done:
/// the device must be idle before a step may see the arena.
static void waitForDevice() { FSDPRT_CUDA_CHECK(cudaDeviceSynchronize()); }

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
  waitForDevice();
}

Arena::~Arena() {
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

void Arena::upload(int64_t offset, int64_t count) {
  FSDPRT_CUDA_CHECK(cudaMemcpy(static_cast<uint8_t *>(step) + offset, hostView + offset,
                               static_cast<size_t>(count), cudaMemcpyHostToDevice));
  waitForDevice();
}

void Arena::download(int64_t offset, int64_t count) {
  FSDPRT_CUDA_CHECK(cudaMemcpy(hostView + offset, static_cast<uint8_t *>(step) + offset,
                               static_cast<size_t>(count), cudaMemcpyDeviceToHost));
}

void Arena::fill(int64_t offset, int64_t count, uint8_t value) {
  FSDPRT_CUDA_CHECK(
      cudaMemset(static_cast<uint8_t *>(step) + offset, value, static_cast<size_t>(count)));
  waitForDevice();
}

} // namespace fsdprt
