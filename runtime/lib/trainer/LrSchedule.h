//===- LrSchedule.h - The learning rate of each step ------------*- C++ -*-===//
//
// What every LLM trainer does with its learning rate (docs/Runtime.md,
// section 5): a linear warmup from 0 to the peak over the first steps, then
// a cosine or linear decay to a floor, which it keeps. The step takes its
// rate as an argument, so the schedule is the trainer's alone; it is logged
// with every step and kept in checkpoints.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_TRAINER_LRSCHEDULE_H
#define FSDPRT_TRAINER_LRSCHEDULE_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fsdprt {

enum class LrDecay { None, Cosine, Linear };

/// "none", "cosine", "linear".
const char *lrDecayName(LrDecay decay);
std::optional<LrDecay> parseLrDecay(std::string_view text);

struct LrSchedule {
  double peak = 0.0;
  int64_t warmupSteps = 0;
  LrDecay decay = LrDecay::None;
  /// The step at which the decay reaches `floor` (> warmupSteps).
  int64_t decaySteps = 0;
  double floor = 0.0;

  /// The rate of step `step` (from 1): peak * step / warmup during the
  /// warmup; then, with progress p = (step - warmup) / (decay_steps - warmup)
  /// clamped to [0, 1], floor + (peak - floor) * (1 + cos(pi p)) / 2 (cosine)
  /// or peak - (peak - floor) * p (linear); the peak without decay.
  double at(int64_t step) const;

  /// Empty when the schedule is well formed, else what is wrong with it, in
  /// terms of the trainer's flags.
  std::string problem() const;
};

} // namespace fsdprt

#endif // FSDPRT_TRAINER_LRSCHEDULE_H
