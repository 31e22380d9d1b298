//===- CollectiveTimeout.cpp - How long a rank waits for the others -------===//

#include "abi/CollectiveTimeout.h"

#include "abi/Error.h"

#include <atomic>
#include <cstdio>

namespace fsdprt {

namespace {
// Read by the CUDA backend's watchdog thread while the trainer's sets them.
std::atomic<int64_t> timeoutMs{kDefaultCollectiveTimeout.count()};
std::atomic<int64_t> step{0};
std::atomic<bool> firstStep{true};
} // namespace

void setCollectiveTimeout(Milliseconds timeout) { timeoutMs = timeout.count(); }

Milliseconds collectiveTimeout() { return Milliseconds(timeoutMs.load()); }

void setCurrentStep(int64_t current, bool firstOfRun) {
  step = current;
  firstStep = firstOfRun;
}

int64_t currentStep() { return step; }

Milliseconds currentStepLimit() {
  return firstStep ? 2 * collectiveTimeout() : collectiveTimeout();
}

std::string formatSeconds(Milliseconds duration) {
  return formatReal(static_cast<double>(duration.count()) / 1000.0);
}

std::string timeoutMessage(int64_t atStep, const std::string &what, Milliseconds waited,
                           Milliseconds limit) {
  char seconds[32];
  // Tenths of a second, or milliseconds under a second.
  double inSeconds = static_cast<double>(waited.count()) / 1000.0;
  std::snprintf(seconds, sizeof(seconds), inSeconds < 1.0 ? "%.3f" : "%.1f", inSeconds);
  return "step " + std::to_string(atStep) + ": " + what + " has not completed after " + seconds +
         " s (--collective-timeout=" + formatSeconds(collectiveTimeout()) +
         (limit != collectiveTimeout() ? ", doubled in a run's first step" : "") +
         "): a rank of its group stopped answering, or a device stopped; stopping every rank";
}

} // namespace fsdprt
