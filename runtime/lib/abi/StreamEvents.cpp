//===- StreamEvents.cpp - The step's streams and events, checked ----------===//

#include "abi/StreamEvents.h"

#include "abi/Error.h"

#include <string>

namespace fsdprt {

/// The step in which each event was last recorded (0: never). Steps are
/// numbered from 1 here, so that calls outside the trainer (tests) have one.
static uint64_t recordedInStep[kMaxEvents];
static uint64_t currentStep = 1;

void checkStream(const char *what, int32_t stream) {
  if (stream < 0 || stream >= kStreams)
    fatal(std::string(what) + ": unknown stream " + std::to_string(stream) +
          " (expected 0 compute, 1 all-gather, 2 reduce-scatter, 3 copy or 4 tensor)");
}

static void checkEvent(const char *what, int32_t event) {
  if (event < 0 || event >= kMaxEvents)
    fatal(std::string(what) + ": event " + std::to_string(event) + " is outside [0, " +
          std::to_string(kMaxEvents) + ")");
}

void checkEventRecord(int32_t event, int32_t stream) {
  const char *what = "fsdprt_event_record";
  checkStream(what, stream);
  checkEvent(what, event);
  recordedInStep[event] = currentStep;
}

void checkStreamWaitEvent(int32_t stream, int32_t event) {
  const char *what = "fsdprt_stream_wait_event";
  checkStream(what, stream);
  checkEvent(what, event);
  if (recordedInStep[event] != currentStep)
    fatal(std::string(what) + ": event " + std::to_string(event) +
          " was not recorded earlier in this step (each wait needs an fsdprt_event_record "
          "before it)");
}

void startStepEvents() { ++currentStep; }

} // namespace fsdprt
