//===- StreamEvents.h - The step's streams and events, checked --*- C++ -*-===//
//
// fsdprt_stream, fsdprt_event_record and fsdprt_stream_wait_event (fsdprt.h;
// docs/Runtime.md, section 7) order the step's work across the compute,
// all-gather and reduce-scatter streams. The CUDA backend records and waits
// for real events (lib/cuda/CudaStreams.cpp); on the CPU everything runs in
// program order (lib/cpu/HostDevice.cpp). Which calls are valid is the same
// for both, and is checked here: a step that is wrong on the GPU is wrong on
// the CPU too. On CUDA a wait for an event never recorded would silently
// not wait.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_ABI_STREAMEVENTS_H
#define FSDPRT_ABI_STREAMEVENTS_H

#include "fsdprt/fsdprt.h"

#include <cstdint>

namespace fsdprt {

/// The streams FSDPRT_STREAM_COMPUTE, _ALL_GATHER, _REDUCE_SCATTER and _COPY.
constexpr int32_t kStreams = FSDPRT_STREAM_COUNT;
/// Event ids are in [0, kMaxEvents).
constexpr int32_t kMaxEvents = FSDPRT_MAX_EVENTS;

/// Checks `stream` is one of the kStreams streams; fatal otherwise, naming
/// the call `what`.
void checkStream(const char *what, int32_t stream);

/// Checks fsdprt_event_record's arguments, and notes that `event` was
/// recorded in this step.
void checkEventRecord(int32_t event, int32_t stream);

/// Checks fsdprt_stream_wait_event's arguments: `event` must have been
/// recorded earlier in this step.
void checkStreamWaitEvent(int32_t stream, int32_t event);

/// A new step begins: no event has been recorded in it yet.
void startStepEvents();

} // namespace fsdprt

#endif // FSDPRT_ABI_STREAMEVENTS_H
