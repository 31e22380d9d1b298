//===- StepTimelineTest.cpp - The step as it ran, for --trace -------------===//
//
// The timeline's probe of the arena at unit boundaries: called after each
// all-gather's wait of the probed step and nowhere else, outside the step's
// clock; and the trace with the trainer's marks in it still a trace.
//
//===----------------------------------------------------------------------===//

#include "trace/HighWater.h"
#include "trace/StepTimeline.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <thread>
#include <vector>

using namespace fsdprt;

namespace {

using Clock = StepTimeline::Clock;

/// A step of two units: gather both, reduce one, wait in that order.
void runStep(StepTimeline &timeline, int64_t step) {
  timeline.beginStep(step);
  timeline.collectiveStarted(0, "all_gather_start", 64);
  timeline.collectiveStarted(1, "all_gather_start", 128);
  timeline.collectiveWaited(0, Clock::now(), Clock::now());
  timeline.collectiveStarted(2, "reduce_scatter_start", 64);
  timeline.collectiveWaited(2, Clock::now(), Clock::now());
  timeline.collectiveWaited(1, Clock::now(), Clock::now());
  timeline.endStep();
}

/// The step `trace` kept (its "step" member).
int64_t keptStep(const StepTimeline &timeline) {
  nlohmann::json trace = nlohmann::json::parse(timeline.chromeTrace(0, 2, "cpu"));
  return trace["otherData"]["step"].get<int64_t>();
}

TEST(StepTimeline, NeverKeepsTheFirstStepOfARunOfMore) {
  // A resumed run starts after its checkpoint's step: its first step is the
  // one the start-up disturbs, however fast it looks.
  for (int64_t first : {1, 6}) {
    StepTimeline timeline;
    runStep(timeline, first);
    EXPECT_EQ(keptStep(timeline), first);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    timeline.beginStep(first + 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    timeline.endStep();
    EXPECT_EQ(keptStep(timeline), first + 1) << "first step " << first;
  }
}

TEST(StepTimeline, ProbesEveryGatherWaitOfItsStepOnly) {
  StepTimeline timeline;
  std::vector<std::string> calls;
  int64_t current = 0;
  timeline.probeGatherWaits(2, [&] { calls.push_back("step " + std::to_string(current)); });
  for (current = 1; current <= 3; ++current)
    runStep(timeline, current);
  // The two gathers of step 2, not its reduce-scatter.
  EXPECT_EQ(calls, (std::vector<std::string>{"step 2", "step 2"}));
}

TEST(StepTimeline, AProbeIsNoPartOfTheStep) {
  StepTimeline timeline;
  double probeSeconds = 0;
  timeline.probeGatherWaits(1, [&] {
    Clock::time_point begin = Clock::now();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    probeSeconds += std::chrono::duration<double>(Clock::now() - begin).count();
  });
  runStep(timeline, 1);
  nlohmann::json trace = nlohmann::json::parse(timeline.chromeTrace(0, 1, "cpu"));
  // Two probes of 100 ms each; the step itself is a few clock reads.
  double stepSeconds = trace["otherData"]["step_seconds"];
  EXPECT_GE(probeSeconds, 0.2);
  EXPECT_LT(stepSeconds, probeSeconds / 2);
  for (const nlohmann::json &event : trace["traceEvents"]) {
    if (event["ph"] == "X") {
      EXPECT_LT(event["ts"].get<double>() + event["dur"].get<double>(), stepSeconds * 1e6 + 1)
          << event.dump();
    }
  }
}

TEST(StepTimeline, TheMarksAreAMemberOfTheTrace) {
  StepTimeline timeline;
  runStep(timeline, 1);
  StepHighWater marks{1, 1152, 1792, {1344, 1600}, 1792};
  std::string text = timeline.chromeTrace(0, 1, "cpu", marks.traceMember());
  nlohmann::json trace = nlohmann::json::parse(text);
  EXPECT_EQ(trace["arena_high_water"],
            nlohmann::json::parse(R"({"step": 1, "persistent_bytes": 1152, "arena_bytes": 1792,
                                      "after_gather_waits": [1344, 1600], "end_of_step": 1792})"));
  // The trace's own members first, ours last.
  EXPECT_LT(text.find("\"traceEvents\""), text.find("\"arena_high_water\""));
  EXPECT_LT(text.find("\"otherData\""), text.find("\"arena_high_water\""));
  int waits = 0;
  for (const nlohmann::json &event : trace["traceEvents"])
    waits += event["name"].get<std::string>().rfind("wait ", 0) == 0;
  EXPECT_EQ(waits, 3);
  // Without members, the trace is as before.
  EXPECT_FALSE(nlohmann::json::parse(timeline.chromeTrace(0, 1, "cpu")).contains("arena_high_water"));
}

} // namespace
