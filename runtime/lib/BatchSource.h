//===- BatchSource.h - Where a step's inputs come from ----------*- C++ -*-===//
//
// Before each step the runtime writes the batch's inputs at their arena
// offsets (docs/Runtime.md, section 4), either from a data file or from the
// seeded synthetic task.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_BATCHSOURCE_H
#define FSDPRT_BATCHSOURCE_H

#include <cstdint>

namespace fsdprt {

class BatchSource {
public:
  virtual ~BatchSource() = default;

  /// Writes every model input of step `step` (counting from 1) at its offset
  /// in `arena`.
  virtual void writeBatch(int64_t step, uint8_t *arena) = 0;
};

} // namespace fsdprt

#endif // FSDPRT_BATCHSOURCE_H
