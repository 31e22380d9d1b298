//===- SyntheticData.h - The seeded synthetic training task -----*- C++ -*-===//
//
// Without --data, every input is generated from Philox (docs/Runtime.md,
// section 4) so that any model has a learnable task: normal features, token
// sequences with a fixed stride, next-token (bigram) targets, and targets of a
// fixed random linear teacher on the features.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_SYNTHETICDATA_H
#define FSDPRT_SYNTHETICDATA_H

#include "BatchSource.h"
#include "Manifest.h"
#include "Philox.h"

#include <optional>
#include <vector>

namespace fsdprt {

class SyntheticData final : public BatchSource {
public:
  /// Decides how each input is produced; fatal if an input cannot be (e.g.
  /// classes with neither a tokens input of the same shape nor features).
  SyntheticData(const Manifest &manifest, uint64_t seed);

  /// The data set has kSamples samples (or one batch, if larger). Step
  /// `step` uses samples n = ((step - 1) * batch + b) mod size, b = 0 ..
  /// batch - 1: a data set generated once, at the first step, then replayed,
  /// so that producing data costs no more per step than reading a file.
  void writeBatch(int64_t step, uint8_t *arena) override;

  static constexpr int64_t kSamples = 1024;

  /// Writes sample `n` of every input at batch row `row` of its arena slot.
  void writeSample(uint64_t n, int64_t row, uint8_t *arena) const;

private:
  enum class Source {
    StandardNormal,   // features
    StrideTokens,     // tokens: x_0 random, x_{t+1} = (x_t + 7) mod V
    NextToken,        // classes paired with a tokens input of the same shape
    TeacherArgmax,    // classes of the features' linear teacher
    TeacherSum,       // regression_target: the teacher's outputs
  };

  /// A fixed standard-normal matrix W[j, c], j over the flattened first
  /// features input, c over the teacher's outputs.
  struct Teacher {
    int64_t outputs = 0;
    std::vector<double> weights; // row-major [features, outputs]
  };

  struct InputPlan {
    InputSpec input;
    Source source = Source::StandardNormal;
    size_t tokensInput = 0; // NextToken: position of the paired tokens input
    Teacher teacher;        // TeacherArgmax, TeacherSum
  };

  Teacher makeTeacher(const InputSpec &input, int64_t outputs) const;
  void writeGenerated(const InputPlan &plan, uint64_t n, int64_t row, uint8_t *arena) const;
  void writeDerived(const InputPlan &plan, int64_t row, uint8_t *arena) const;

  /// Generates every batch of the data set, keeping each one's input bytes.
  void generateDataSet(uint8_t *arena);

  uint64_t seed;
  int64_t batch;
  /// Input bytes of each batch of the data set, inputs one after the other.
  std::vector<std::vector<uint8_t>> batches;
  PhiloxKey dataKey;
  std::vector<InputPlan> plans;
  /// The first features input (the teacher's input), if there is one.
  std::optional<InputSpec> features;
};

} // namespace fsdprt

#endif // FSDPRT_SYNTHETICDATA_H
