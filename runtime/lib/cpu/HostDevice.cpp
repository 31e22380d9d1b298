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

#include <cblas.h>

namespace fsdprt {

std::string backendVersion() {
  // OpenBLAS picks its kernels at run time (OPENBLAS_CORETYPE overrides the
  // choice): the core says which ones the products use.
  return std::string("backend: cpu\nblas: ") + openblas_get_config() + ", core " +
         openblas_get_corename() + ", " + std::to_string(openblas_get_num_threads()) +
         " threads\n";
}

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
