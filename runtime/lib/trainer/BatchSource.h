//===- BatchSource.h - Where a step's inputs come from ----------*- C++ -*-===//
//
// Before each step the runtime writes this rank's rows of the batch at the
// inputs' arena offsets (docs/Runtime.md, section 4), either from a data file
// or from the seeded synthetic task.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_TRAINER_BATCHSOURCE_H
#define FSDPRT_TRAINER_BATCHSOURCE_H

#include "abi/DeviceScalars.h"

#include <cstdint>

namespace fsdprt {

/// Which samples a rank's rows hold. The global batch of step s is samples
/// (s - 1) * batch + g mod N, g = 0 .. batch - 1; the ranks of data index d
/// (rank / tensor_ranks: every tensor rank of it reads the same rows) take
/// rows g = d * local_batch + b, b = 0 .. local_batch - 1. With one rank this
/// is the whole batch, in order. A run resumed after step k from a checkpoint
/// that had seen S samples continues at sample S: step s > k starts at
/// S + (s - k - 1) * batch, which is (s - 1) * batch when the batch is the
/// checkpoint's.
struct RankRows {
  int64_t batch = 0; // global
  int64_t localBatch = 0;
  int64_t dataIndex = 0;
  int64_t resumedStep = 0;
  int64_t resumedSamples = 0;

  RankRows(const Manifest &manifest, int64_t dataIndex);
  RankRows(int64_t batch, int64_t localBatch, int64_t dataIndex)
      : batch(batch), localBatch(localBatch), dataIndex(dataIndex) {}

  /// The sample that local row `row` of step `step` (from 1) holds, in a
  /// data set of `samples` samples. Exact for any step: (step - 1) * batch
  /// can exceed 64 bits on a long run.
  int64_t sampleOf(int64_t step, int64_t row, int64_t samples) const;

  /// The index of that sample in the endless sequence of samples (before the
  /// modulo): sources that reorder each pass over the data (epochs) need it.
  unsigned __int128 globalSample(int64_t step, int64_t row) const;

  /// Steps after `step` continue at sample `samplesSeen`.
  void resumeAfter(int64_t step, int64_t samplesSeen) {
    resumedStep = step;
    resumedSamples = samplesSeen;
  }
};

class BatchSource {
public:
  explicit BatchSource(RankRows rows) : rows(rows) {}
  virtual ~BatchSource() = default;

  /// Writes this rank's rows of every model input of step `step` (counting
  /// from 1) at their offsets in `arena`.
  virtual void writeBatch(int64_t step, uint8_t *arena) = 0;

  /// The samples of the data set (a step's rows wrap around after them).
  virtual int64_t numSamples() const = 0;

  /// A resumed run: steps after `step` continue at sample `samplesSeen`.
  void resumeAfter(int64_t step, int64_t samplesSeen) { rows.resumeAfter(step, samplesSeen); }

protected:
  RankRows rows;
};

/// Writes step `step`'s rows of `source` into the arena's host view, and
/// `scalars` when the manifest has device_scalars, and uploads them to the
/// arena together (Arena::upload of ranges).
void loadBatch(BatchSource &source, int64_t step, const Manifest &manifest, Arena &arena,
               const StepScalars &scalars = {});

} // namespace fsdprt

#endif // FSDPRT_TRAINER_BATCHSOURCE_H
