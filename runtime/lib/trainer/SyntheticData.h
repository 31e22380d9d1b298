//===- SyntheticData.h - The seeded synthetic training task -----*- C++ -*-===//
//
// Without --data, every input is generated from Philox (docs/Runtime.md,
// section 4) so that any model has a learnable task: normal features, token
// sequences with a fixed stride, next-token (bigram) targets, and targets of a
// fixed random linear teacher on the features.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_TRAINER_SYNTHETICDATA_H
#define FSDPRT_TRAINER_SYNTHETICDATA_H

#include "abi/Manifest.h"
#include "trainer/BatchSource.h"
#include "trainer/Philox.h"

#include <optional>
#include <vector>

namespace fsdprt {

class SyntheticData final : public BatchSource {
public:
  /// Decides how each input is produced; fatal if an input cannot be (e.g.
  /// classes with neither a tokens input of the same shape nor features).
  /// `dataIndex` chooses the rows written (RankRows).
  SyntheticData(const Manifest &manifest, uint64_t seed, int64_t dataIndex = 0);

  /// The data set has batch * ceil(kSamples / batch) samples (whole global
  /// batches), generated once, at the first step, the same on every rank,
  /// then replayed, so that producing data costs no more per step than
  /// reading a file. Local row b of step `step` holds sample
  /// RankRows::sampleOf(step, b, size).
  void writeBatch(int64_t step, uint8_t *arena) override;

  static constexpr int64_t kSamples = 1024;

  /// The number of samples of the data set.
  int64_t numSamples() const override;

  /// Writes sample `n` of every input into `record` (input t at
  /// recordOffsets[t], in the layout of a data file's record).
  void writeSample(uint64_t n, uint8_t *record) const;

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
  void writeGenerated(const InputPlan &plan, uint64_t n, uint8_t *record) const;
  void writeDerived(const InputPlan &plan, uint8_t *record) const;

  /// Generates every sample of the data set.
  void generateDataSet();

  uint64_t seed;
  /// Byte offset of each input inside a sample record, and the record's size.
  std::vector<int64_t> recordOffsets;
  int64_t recordBytes = 0;
  /// The data set: numSamples() records.
  std::vector<uint8_t> records;
  PhiloxKey dataKey;
  std::vector<InputPlan> plans;
  /// The first features input (the teacher's input), if there is one, and
  /// its position in `plans`.
  std::optional<InputSpec> features;
  size_t featuresPlan = 0;
};

} // namespace fsdprt

#endif // FSDPRT_TRAINER_SYNTHETICDATA_H
