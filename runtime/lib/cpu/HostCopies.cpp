//===- HostCopies.cpp - offload's copies on the CPU backend ---------------===//
//
// fsdprt_copy_to_host_start and fsdprt_copy_to_device_start (fsdprt.h): on
// the CPU the arena is host memory too, so a copy is a memcpy, complete when
// it returns; its handle is waited for like a collective's. Only a step
// compiled for a GPU (`offload = optimizer` is an error on the CPU target)
// calls them: the CUDA target's kernels run on the CPU in the tests.
//
//===----------------------------------------------------------------------===//

#include "abi/Collectives.h"
#include "fsdprt/fsdprt.h"

#include <cstring>

using namespace fsdprt;

static int32_t copyNow(const char *what, HandleKind kind, void *to, const void *from,
                       int64_t bytes) {
  checkSize(what, bytes);
  if (bytes > 0)
    std::memmove(to, from, static_cast<size_t>(bytes));
  return takeHandle(what, kind);
}

extern "C" int32_t fsdprt_copy_to_host_start(void *host, const void *device, int64_t bytes) {
  return copyNow("fsdprt_copy_to_host_start", HandleKind::CopyToHost, host, device, bytes);
}

extern "C" int32_t fsdprt_copy_to_device_start(void *device, const void *host, int64_t bytes) {
  return copyNow("fsdprt_copy_to_device_start", HandleKind::CopyToDevice, device, host, bytes);
}
