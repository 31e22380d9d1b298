//===- HostCopies.cpp - offload's copies between host and device ----------===//
//
// fsdprt_copy_to_host_start and fsdprt_copy_to_device_start (fsdprt.h;
// docs/Runtime.md, section 6): asynchronous copies between the arena and
// the page-locked host arena on the copy stream, so that a gradient shard
// travels to the host, and the updated shard back, while the compute stream
// goes on. Each records its handle's event; fsdprt_wait (NcclCollectives.cpp)
// blocks the host on a copy to the host, whose bytes the host's update reads.
// The step orders the copy stream after the work that wrote a copy's source
// with the compiler's events (fsdp-cuda-insert-stream-events).
//
//===----------------------------------------------------------------------===//

#include "abi/Collectives.h"
#include "cuda/CudaCheck.h"
#include "cuda/CudaDevice.h"
#include "fsdprt/fsdprt.h"

using namespace fsdprt;

static int32_t startCopy(const char *what, HandleKind kind, void *to, const void *from,
                         int64_t bytes, cudaMemcpyKind direction) {
  checkSize(what, bytes);
  cudaStream_t stream = deviceStream(what, FSDPRT_STREAM_COPY);
  int32_t handle = takeHandle(what, kind);
  if (bytes > 0)
    FSDPRT_CUDA_CHECK(
        cudaMemcpyAsync(to, from, static_cast<size_t>(bytes), direction, stream));
  afterDeviceWork(what, stream);
  return recordDone(handle, stream);
}

extern "C" int32_t fsdprt_copy_to_host_start(void *host, const void *device, int64_t bytes) {
  return startCopy("fsdprt_copy_to_host_start", HandleKind::CopyToHost, host, device, bytes,
                   cudaMemcpyDeviceToHost);
}

extern "C" int32_t fsdprt_copy_to_device_start(void *device, const void *host, int64_t bytes) {
  return startCopy("fsdprt_copy_to_device_start", HandleKind::CopyToDevice, device, host, bytes,
                   cudaMemcpyHostToDevice);
}
