//===- BatchSource.cpp - Where a step's inputs come from ------------------===//

#include "trainer/BatchSource.h"

#include "abi/Arena.h"
#include "abi/Manifest.h"

#include <vector>

namespace fsdprt {

RankRows::RankRows(const Manifest &manifest, int64_t dataIndex)
    : batch(manifest.batch), localBatch(manifest.localBatch), dataIndex(dataIndex) {}

unsigned __int128 RankRows::globalSample(int64_t step, int64_t row) const {
  return static_cast<unsigned __int128>(step - 1 - resumedStep) * static_cast<uint64_t>(batch) +
         static_cast<uint64_t>(resumedSamples) +
         static_cast<uint64_t>(dataIndex * localBatch + row);
}

void loadBatch(BatchSource &source, int64_t step, const Manifest &manifest, Arena &arena,
               const StepScalars &scalars) {
  source.writeBatch(step, arena.host());
  std::vector<ByteRange> ranges;
  for (const InputSpec &input : manifest.inputs)
    ranges.push_back({input.offset, input.bytes});
  if (manifest.deviceScalars)
    ranges.push_back(writeDeviceScalars(manifest, arena.host(), scalars));
  arena.upload(ranges);
}

int64_t RankRows::sampleOf(int64_t step, int64_t row, int64_t samples) const {
  return static_cast<int64_t>(globalSample(step, row) % static_cast<uint64_t>(samples));
}

} // namespace fsdprt
