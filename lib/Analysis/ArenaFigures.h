//===- ArenaFigures.h - a compiled step's arena, from its manifest -*- C++ -*-===//
//
// The figures of a step's buffer plan that fsdp-assign-buffers writes into the
// #fsdp.manifest (and convert-fsdp-to-runtime's host arena of offload), read back in
// one place for the budget, the fit search and fsdp-report.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_ANALYSIS_ARENAFIGURES_H
#define FSDP_ANALYSIS_ARENAFIGURES_H

#include "fsdp/IR/FSDPAttrs.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace mlir::fsdp {

/// One rank's arena: its size, its persistent part, and the transient
/// buffers live at its peak, by kind.
struct ArenaFigures {
  int64_t arenaBytes = 0;      // the planned peak
  int64_t persistentBytes = 0; // shards and inputs, alive across steps
  int64_t transientPeak = 0, liveBytes = 0, buffers = 0;
  /// The transient buffers live at the peak, by kind (collective buffers
  /// counted with the activations) and by element type.
  int64_t activations = 0, gathered = 0, gradients = 0, gradientShards = 0;
  std::map<std::string, int64_t> dtypeBytes;
  /// What recompute adds to a step (fsdp-remat), when the plan has remat.
  RecomputeAttr recompute;
  /// offload = optimizer: the page-locked host arena (not in the budget), and
  /// the bytes the step copies to the host (gradient shards as they arrive,
  /// the clipping coefficient) and back (parameter shards in param_dtype).
  int64_t hostArenaBytes = 0, toHostBytes = 0, toDeviceBytes = 0;

  /// Reads a manifest after fsdp-assign-buffers; none when it has no buffer
  /// plan.
  static std::optional<ArenaFigures> fromManifest(ManifestAttr manifest);
};

} // namespace mlir::fsdp

#endif // FSDP_ANALYSIS_ARENAFIGURES_H
