//===- LrSchedule.cpp - The learning rate of each step --------------------===//

#include "trainer/LrSchedule.h"

#include <algorithm>
#include <cmath>


namespace fsdprt {

static constexpr double kPi = 3.14159265358979323846;

const char *lrDecayName(LrDecay decay) {
  switch (decay) {
  case LrDecay::None:
    return "none";
  case LrDecay::Cosine:
    return "cosine";
  case LrDecay::Linear:
    return "linear";
  }
  return "none";
}

std::optional<LrDecay> parseLrDecay(std::string_view text) {
  for (LrDecay decay : {LrDecay::None, LrDecay::Cosine, LrDecay::Linear})
    if (text == lrDecayName(decay))
      return decay;
  return std::nullopt;
}

double LrSchedule::at(int64_t step) const {
  if (step <= warmupSteps)
    return peak * static_cast<double>(step) / static_cast<double>(warmupSteps);
  if (decay == LrDecay::None)
    return peak;
  double progress = std::clamp(static_cast<double>(step - warmupSteps) /
                                   static_cast<double>(decaySteps - warmupSteps),
                               0.0, 1.0);
  if (decay == LrDecay::Cosine)
    return floor + (peak - floor) * 0.5 * (1.0 + std::cos(kPi * progress));
  return peak - (peak - floor) * progress;
}

std::string LrSchedule::problem() const {
  if (decay == LrDecay::None)
    return floor == 0.0 ? std::string() : "--min-lr needs --lr-decay cosine or linear";
  if (!(floor <= peak))
    return "--min-lr must not exceed the peak learning rate (--lr or the plan's lr)";
  if (decaySteps <= warmupSteps)
    return "--decay-steps (" + std::to_string(decaySteps) +
           ") must be greater than --warmup-steps (" + std::to_string(warmupSteps) + ")";
  return {};
}

} // namespace fsdprt
