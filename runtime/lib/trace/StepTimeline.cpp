//===- StepTimeline.cpp - The step as it ran, for --trace -----------------===//

#include "trace/StepTimeline.h"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace fsdprt {

void StepTimeline::beginStep(int64_t number) {
  step = number;
  if (firstStep == 0)
    firstStep = number;
  events.clear();
  startedEvent.clear();
  stepBegin = Clock::now();
}

void StepTimeline::endStep() {
  double stepSeconds = since(Clock::now());
  // The compute stream is busy between the runtime's calls too: the
  // generated loops. Each gap of the compute track becomes one event.
  std::vector<Event> compute;
  for (const Event &event : events)
    if (event.track == 0)
      compute.push_back(event);
  std::sort(compute.begin(), compute.end(),
            [](const Event &a, const Event &b) { return a.start < b.start; });
  double free = 0;
  for (const Event &event : compute) {
    if (event.start > free)
      events.push_back({"loops", 0, free, event.start, 0, 0});
    free = std::max(free, event.end);
  }
  if (stepSeconds > free)
    events.push_back({"loops", 0, free, stepSeconds, 0, 0});
  // The only step of a one-step run is kept all the same.
  if (keptStep == 0 || (keptStep == firstStep && step > firstStep) || stepSeconds < keptSeconds) {
    keptStep = step;
    keptSeconds = stepSeconds;
    kept.swap(events);
  }
}

void StepTimeline::product(const char *name, Clock::time_point begin, Clock::time_point end,
                           double flops) {
  events.push_back({name, 0, since(begin), since(end), flops, 0});
}

void StepTimeline::collectiveStarted(int32_t handle, const char *name, int64_t bytes) {
  if (startedEvent.size() <= static_cast<size_t>(handle))
    startedEvent.resize(handle + 1, -1);
  startedEvent[handle] = static_cast<int64_t>(events.size());
  double now = since(Clock::now());
  bool gather = std::string(name) == "all_gather_start";
  events.push_back({name, gather ? 1 : 2, now, now, 0, static_cast<double>(bytes)});
}

void StepTimeline::collectiveWaited(int32_t handle, Clock::time_point begin,
                                    Clock::time_point end) {
  if (static_cast<size_t>(handle) >= startedEvent.size() || startedEvent[handle] < 0)
    return;
  Event &collective = events[startedEvent[handle]];
  // Where MPI progresses only inside its calls, this is when the collective
  // is known to be complete.
  collective.end = since(end);
  bool gather = collective.track == 1;
  events.push_back({"wait " + collective.name, 0, since(begin), since(end), 0, collective.bytes});
  startedEvent[handle] = -1;
  if (!gather || !probe || step != probedStep)
    return;
  // The step's clock moves on by what the probe took: every later time of
  // the step is measured as if it had not run.
  Clock::time_point probeBegin = Clock::now();
  probe();
  stepBegin += Clock::now() - probeBegin;
}

void StepTimeline::probeGatherWaits(int64_t stepToProbe, std::function<void()> callback) {
  probedStep = stepToProbe;
  probe = std::move(callback);
}

static std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.9g", value);
  return text;
}

std::string StepTimeline::chromeTrace(int rank, int64_t steps, const std::string &backend,
                                      const std::string &members) const {
  static const char *tracks[] = {"compute", "all-gather", "reduce-scatter / all-reduce"};
  std::string out = "{\"traceEvents\":[";
  out += "{\"ph\":\"M\",\"pid\":0,\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":\"rank " +
         std::to_string(rank) + ", measured (" + backend + "), step " + std::to_string(keptStep) +
         ", the fastest of " + std::to_string(steps) + "\"}}";
  for (int track = 0; track < 3; ++track)
    out += ",{\"ph\":\"M\",\"pid\":0,\"tid\":" + std::to_string(track) +
           ",\"name\":\"thread_name\",\"args\":{\"name\":\"" + tracks[track] + "\"}}";
  for (const Event &event : kept) {
    out += ",{\"ph\":\"X\",\"pid\":0,\"tid\":" + std::to_string(event.track) + ",\"ts\":" +
           number(event.start * 1e6) + ",\"dur\":" + number((event.end - event.start) * 1e6) +
           ",\"name\":\"" + event.name + "\",\"cat\":\"" +
           (event.track == 0 ? "compute" : "communication") + "\",\"args\":{\"bytes\":" +
           number(event.bytes);
    if (event.flops > 0)
      out += ",\"flops\":" + number(event.flops);
    out += "}}";
  }
  out += "],\"displayTimeUnit\":\"ms\",\"otherData\":{\"step_seconds\":" + number(keptSeconds) +
         ",\"step\":" + std::to_string(keptStep) + ",\"steps\":" + std::to_string(steps) + "}";
  if (!members.empty())
    out += "," + members;
  out += "}\n";
  return out;
}

} // namespace fsdprt
