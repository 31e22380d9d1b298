//===- LossCopies.cpp - Each step's loss on its way to the host -----------===//
//
// The CUDA backend's copyLossToHost and takeLoss (Device.h). The trainer
// reads step N's loss once step N + 1 is enqueued, so that the device never
// waits for the host between steps: each step's 4 bytes are copied
// (cudaMemcpyAsync on the compute stream, after the step's work) into a slot
// of page-locked memory, the only memory a copy to the host can be
// asynchronous to, and an event recorded after the copy tells the host when
// that slot holds them. Step N + 1's copy goes to the other slot, so it
// cannot overwrite step N's before it is read; the trainer reads each before
// it enqueues the one after next.
//
//===----------------------------------------------------------------------===//

#include "abi/Device.h"
#include "abi/Error.h"
#include "cuda/CudaCheck.h"
#include "cuda/CudaDevice.h"
#include "fsdprt/fsdprt.h"

namespace fsdprt {

namespace {

constexpr int kSlots = 2;
float *slots = nullptr; // kSlots floats, page-locked
cudaEvent_t copied[kSlots] = {};
bool untaken[kSlots] = {};
int next = 0;

} // namespace

int copyLossToHost(const void *address) {
  cudaStream_t compute = deviceStream("copyLossToHost", FSDPRT_STREAM_COMPUTE);
  if (!slots) {
    void *pinned = nullptr;
    FSDPRT_CUDA_CHECK(cudaHostAlloc(&pinned, kSlots * sizeof(float), cudaHostAllocDefault));
    slots = static_cast<float *>(pinned);
  }
  int ticket = next;
  next = (next + 1) % kSlots;
  if (untaken[ticket])
    fatal("copyLossToHost: a step's loss was copied over before it was read (the trainer reads "
          "each loss before it enqueues the step after next)");
  FSDPRT_CUDA_CHECK(
      cudaMemcpyAsync(&slots[ticket], address, sizeof(float), cudaMemcpyDeviceToHost, compute));
  recordEvent(copied[ticket], compute);
  untaken[ticket] = true;
  return ticket;
}

float takeLoss(int ticket) {
  FSDPRT_CUDA_CHECK(cudaEventSynchronize(copied[ticket]));
  untaken[ticket] = false;
  return slots[ticket];
}

void releaseLossCopies() {
  if (slots)
    FSDPRT_CUDA_CHECK(cudaFreeHost(slots));
  slots = nullptr;
  destroyEventTable(copied, kSlots);
  for (bool &slot : untaken)
    slot = false;
  next = 0;
}

} // namespace fsdprt
