//===- Throughput.cpp - Tokens/s, TFLOP/s and MFU of measured steps -------===//

#include "trainer/Throughput.h"

#include <cstdio>
#include <utility>

namespace fsdprt {

namespace {

std::string format(const char *pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof(text), pattern, value);
  return text;
}

/// A count of FLOPs: `95.42 MFLOP`, `1.23 TFLOP`.
std::string formatFlops(double flops) {
  static const char *const kUnits[] = {"FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP"};
  int unit = 0;
  while (flops >= 1000 && unit < 5) {
    flops /= 1000;
    ++unit;
  }
  return format("%.2f ", flops) + kUnits[unit];
}

} // namespace

std::string formatFlopRate(double flopsPerSec) {
  return flopsPerSec >= 1e12 ? format("%.2f TFLOP/s", flopsPerSec / 1e12)
                             : format("%.2f GFLOP/s", flopsPerSec / 1e9);
}

Throughput::Throughput(const Manifest &manifest, PeakRates peak)
    : batch(manifest.batch), tokensPerStep(manifest.tokensPerStep), flops(manifest.stepFlops),
      peak(std::move(peak)) {
  if (!flops)
    return;
  double executed = flops->products + flops->attention;
  modelFlops = executed - flops->recomputed;
  if (executed <= 0 || this->peak.bf16 <= 0 || this->peak.f32 <= 0)
    return;
  // Each precision at its own rate; what is computed twice leaves each in
  // proportion (an attention's scores and remat's copies are of the model's
  // precision).
  double f32Products = flops->products - flops->bf16Products;
  secondsAtPeak =
      ((flops->bf16Products + flops->attention) / this->peak.bf16 + f32Products / this->peak.f32) *
      (modelFlops / executed);
}

std::string Throughput::describe() const {
  if (!flops)
    return "";
  std::string line = "throughput: ";
  line += tokensPerStep > 0 ? std::to_string(tokensPerStep) + " tokens (" + std::to_string(batch) +
                                  " samples) a step"
                            : std::to_string(batch) + " samples a step";
  line += "; each rank's step " + formatFlops(flops->products) + " of products";
  if (flops->attention > 0)
    line += ", " + formatFlops(flops->attention) + " of attention";
  double recomputed = flops->products + flops->attention - modelFlops;
  if (recomputed > 0)
    line += ", less " + formatFlops(recomputed) + " recomputed";
  line += " (and " + formatFlops(flops->other) + " of other float ops, not counted); MFU against ";
  if (secondsAtPeak > 0)
    line += peak.source + ": " + formatFlopRate(peak.bf16) + " bf16, " + formatFlopRate(peak.f32) +
            " f32";
  else
    line += "no known peak" + (peak.source.empty() ? "" : " for " + peak.source) +
            " (--peak-tflops sets one)";
  return line;
}

StepRates Throughput::over(int64_t steps, double seconds) const {
  StepRates rates;
  double count = static_cast<double>(steps);
  rates.samplesPerSec = static_cast<double>(batch) * count / seconds;
  if (tokensPerStep > 0)
    rates.tokensPerSec = static_cast<double>(tokensPerStep) * count / seconds;
  if (flops)
    rates.flopsPerSec = modelFlops * count / seconds;
  if (secondsAtPeak > 0)
    rates.mfu = secondsAtPeak * count / seconds;
  return rates;
}

std::string Throughput::progressFields(const StepRates &rates) {
  std::string fields = rates.tokensPerSec ? format("%.0f tokens/s", *rates.tokensPerSec)
                                          : format("%.1f samples/s", rates.samplesPerSec);
  if (rates.flopsPerSec)
    fields += " | " + formatFlopRate(*rates.flopsPerSec);
  if (rates.mfu)
    fields += format(" | MFU %.1f%%", 100 * *rates.mfu);
  return fields;
}

std::string Throughput::jsonFields(const StepRates &rates) {
  std::string fields = format("\"samples_per_sec\": %.6g", rates.samplesPerSec);
  if (rates.tokensPerSec)
    fields += format(", \"tokens_per_sec\": %.6g", *rates.tokensPerSec);
  if (rates.flopsPerSec)
    fields += format(", \"flops_per_sec\": %.6g", *rates.flopsPerSec);
  if (rates.mfu)
    fields += format(", \"mfu\": %.6g", *rates.mfu);
  return fields;
}

} // namespace fsdprt
