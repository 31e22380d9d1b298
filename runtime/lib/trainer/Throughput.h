//===- Throughput.h - Tokens/s, TFLOP/s and MFU of measured steps -*- C++ -*-===//
//
// People training language models read tokens per second, achieved TFLOP/s
// and model FLOP utilisation (torchtitan prints all three every step). The
// compiler counts each step's FLOPs exactly (manifest step_flops); the
// trainer divides them by the time it measures.
//
// The model's FLOPs are the step's products and fused attention without what
// it computes twice, an attention backward's scores and rematerialisation's
// copies (PaLM's MFU, not its hardware FLOPs utilisation); the other float
// operations are reported, not counted. TFLOP/s and MFU are each rank's;
// tokens/s and samples/s the whole job's.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_TRAINER_THROUGHPUT_H
#define FSDPRT_TRAINER_THROUGHPUT_H

#include "abi/Device.h"
#include "abi/Manifest.h"

#include <cstdint>
#include <optional>
#include <string>

namespace fsdprt {

/// Rates over some steps.
struct StepRates {
  double samplesPerSec = 0;
  std::optional<double> tokensPerSec;
  /// The model's FLOPs per second of one rank, and their share of the peak.
  std::optional<double> flopsPerSec, mfu;
};

class Throughput {
public:
  Throughput(const Manifest &manifest, PeakRates peak);

  /// What one step holds and what MFU is measured against, for the first
  /// line of a run; empty for a manifest without step_flops.
  std::string describe() const;
  /// `steps` steps in `seconds`.
  StepRates over(int64_t steps, double seconds) const;
  /// `12345 tokens/s | 1.23 TFLOP/s | MFU 12.3%` (samples/s without tokens).
  static std::string progressFields(const StepRates &rates);
  /// `"samples_per_sec": ..., "tokens_per_sec": ...` for the JSON log.
  static std::string jsonFields(const StepRates &rates);

private:
  int64_t batch, tokensPerStep;
  std::optional<StepFlopsSpec> flops;
  PeakRates peak;
  /// Per step of a rank: the model's FLOPs, and the seconds they would take
  /// at the peak (0 where a rate is unknown).
  double modelFlops = 0, secondsAtPeak = 0;
};

/// A rate of FLOP/s as people read it: `1.23 TFLOP/s`, `45.6 GFLOP/s`.
std::string formatFlopRate(double flopsPerSec);

} // namespace fsdprt

#endif // FSDPRT_TRAINER_THROUGHPUT_H
