//===- StepTimeline.h - The step as it ran, for --trace ---------*- C++ -*-===//
//
// `--trace FILE` records the fastest step of rank 0 (the first excluded: it
// warms caches and allocators up; the fastest is the one least disturbed by
// the rest of the machine) as the runtime sees it: each
// matrix product, each collective from its start call to the end of its wait,
// each wait (the communication the compute waited for), and the generated
// loops in between, written as a Chrome trace in the format of fsdpc
// --timeline (docs/CostModel.md), so that prediction and measurement lie side
// by side. Recording costs two clock reads per runtime call, and nothing when
// --trace is not given.
//
// The trainer may also look at the arena where compute receives each unit:
// a probe called after every all-gather's wait of one step (the first, which
// is never the step kept when more than one runs), with the step's clock
// stopped while it runs, so that what it costs is no part of the step.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_TRACE_STEPTIMELINE_H
#define FSDPRT_TRACE_STEPTIMELINE_H

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace fsdprt {

class StepTimeline {
public:
  using Clock = std::chrono::steady_clock;

  /// The timeline being recorded, or null without --trace.
  static StepTimeline *active() { return current; }
  static void activate(StepTimeline *timeline) { current = timeline; }

  /// A step starts; at its end it is kept if it is the fastest so far.
  void beginStep(int64_t step);
  void endStep();

  void product(const char *name, Clock::time_point begin, Clock::time_point end, double flops);
  void collectiveStarted(int32_t handle, const char *name, int64_t bytes);
  /// The end of a collective's wait; after an all-gather's in the probed
  /// step, calls the probe.
  void collectiveWaited(int32_t handle, Clock::time_point begin, Clock::time_point end);

  /// Calls `probe` after each all-gather's wait of step `step`, in order,
  /// outside the step's clock.
  void probeGatherWaits(int64_t step, std::function<void()> probe);

  /// The step kept, as a Chrome trace of rank `rank` (of `steps` run), with
  /// `members` (`"key":value`, comma-separated) added to its top-level object
  /// after its own: last, because Perfetto's JSON importer has been known to
  /// skip everything after a top-level key it does not know.
  std::string chromeTrace(int rank, int64_t steps, const std::string &backend,
                          const std::string &members = "") const;

private:
  struct Event {
    std::string name;
    int track = 0; // 0 compute, 1 all-gather, 2 reduce-scatter / all-reduce
    double start = 0, end = 0;
    double flops = 0, bytes = 0;
  };
  double since(Clock::time_point time) const {
    return std::chrono::duration<double>(time - stepBegin).count();
  }

  static inline StepTimeline *current = nullptr;
  Clock::time_point stepBegin;
  int64_t step = 0;
  std::vector<Event> events;
  /// The first step recorded (step 1, or the one after a resumed
  /// checkpoint's), and the fastest step but that one: its number, time and
  /// events.
  int64_t firstStep = 0;
  int64_t keptStep = 0;
  double keptSeconds = 0;
  std::vector<Event> kept;
  /// A started collective's event, by handle.
  std::vector<int64_t> startedEvent;
  int64_t probedStep = 0;
  std::function<void()> probe;
};

/// Times a matrix product of the runtime's when --trace records.
class ProductSpan {
public:
  ProductSpan(const char *name, double flops)
      : name(name), flops(flops),
        begin(StepTimeline::active() ? StepTimeline::Clock::now() : StepTimeline::Clock::time_point()) {}
  ~ProductSpan() {
    if (StepTimeline *timeline = StepTimeline::active())
      timeline->product(name, begin, StepTimeline::Clock::now(), flops);
  }
  ProductSpan(const ProductSpan &) = delete;
  ProductSpan &operator=(const ProductSpan &) = delete;

private:
  const char *name;
  double flops;
  StepTimeline::Clock::time_point begin;
};

} // namespace fsdprt

#endif // FSDPRT_TRACE_STEPTIMELINE_H
