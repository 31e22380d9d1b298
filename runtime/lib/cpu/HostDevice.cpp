//===- HostDevice.cpp - The CPU as the trainer's device -------------------===//
//
// The CPU backend's side of Device.h and of fsdprt.h's streams and events:
// the step runs on the calling thread, in program order, and its collectives
// complete in fsdprt_wait. There is no device to choose or wait for, streams
// are NULL, and events only have their use checked (StreamEvents.h), so that
// a step that would be wrong on the GPU fails on the CPU too.
//
//===----------------------------------------------------------------------===//

#include "Device.h"
#include "StreamEvents.h"
#include "fsdprt/fsdprt.h"

namespace fsdprt {

void openDevice() {}

void connectDevice(const RankPlace &) {}

void finishStep() {}

void closeDevice() {}

} // namespace fsdprt

using namespace fsdprt;

extern "C" void *fsdprt_stream(int32_t stream) {
  checkStream("fsdprt_stream", stream);
  return nullptr;
}

extern "C" void fsdprt_event_record(int32_t event, int32_t stream) {
  checkEventRecord(event, stream);
}

extern "C" void fsdprt_stream_wait_event(int32_t stream, int32_t event) {
  checkStreamWaitEvent(stream, event);
}

extern "C" float fsdprt_read_f32(const float *address) { return *address; }
