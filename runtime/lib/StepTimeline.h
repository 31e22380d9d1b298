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
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_STEPTIMELINE_H
#define FSDPRT_STEPTIMELINE_H

#include <chrono>
#include <cstdint>
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
  void collectiveWaited(int32_t handle, Clock::time_point begin, Clock::time_point end);

  /// The step kept, as a Chrome trace of rank `rank` (of `steps` run).
  std::string chromeTrace(int rank, int64_t steps, const std::string &backend) const;

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
  /// The fastest step but the first: its number, time and events.
  int64_t keptStep = 0;
  double keptSeconds = 0;
  std::vector<Event> kept;
  /// A started collective's event, by handle.
  std::vector<int64_t> startedEvent;
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

#endif // FSDPRT_STEPTIMELINE_H
