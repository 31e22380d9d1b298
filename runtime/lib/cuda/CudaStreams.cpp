//===- CudaStreams.cpp - The step's streams and events on the GPU ---------===//
//
// fsdprt_stream, fsdprt_event_record and fsdprt_stream_wait_event (fsdprt.h;
// docs/Runtime.md, section 7). Events are created at their first recording
// (without timing, which they do not need) and reused; StreamEvents.h checks
// every call first.
//
//===----------------------------------------------------------------------===//

#include "abi/StreamEvents.h"
#include "cuda/CudaCheck.h"
#include "cuda/CudaDevice.h"
#include "fsdprt/fsdprt.h"

namespace fsdprt {

static cudaEvent_t events[kMaxEvents];

void destroyEvents() { destroyEventTable(events, kMaxEvents); }

} // namespace fsdprt

using namespace fsdprt;

extern "C" void *fsdprt_stream(int32_t stream) { return deviceStream("fsdprt_stream", stream); }

extern "C" void fsdprt_event_record(int32_t event, int32_t stream) {
  checkEventRecord(event, stream);
  recordEvent(events[event], deviceStream("fsdprt_event_record", stream));
}

extern "C" void fsdprt_stream_wait_event(int32_t stream, int32_t event) {
  checkStreamWaitEvent(stream, event);
  FSDPRT_CUDA_CHECK(
      cudaStreamWaitEvent(deviceStream("fsdprt_stream_wait_event", stream), events[event], 0));
}
