//===- ArenaFigures.cpp - a compiled step's arena, from its manifest ------===//

#include "Analysis/ArenaFigures.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::fsdp;

/// The transient buffers live at the peak (fsdp-assign-buffers' plan).
static void readTransient(TransientPlanAttr transient, ArenaFigures &plan) {
  plan.transientPeak = transient.getPeakBytes();
  plan.liveBytes = transient.getLiveBytes();
  plan.activations = transient.getActivationBytes() + transient.getCollectiveBytes();
  plan.gathered = transient.getGatheredBytes();
  plan.gradients = transient.getGradientBytes();
  plan.gradientShards = transient.getGradientShardBytes();
  plan.buffers = transient.getBuffers();
  for (NamedAttribute entry : transient.getDtypeBytes())
    if (auto bytes = llvm::dyn_cast<IntegerAttr>(entry.getValue()))
      plan.dtypeBytes[entry.getName().str()] = bytes.getInt();
}

/// The bytes of `elements` of `type`.
static int64_t shardBytes(Type type, int64_t elements) {
  return elements * static_cast<int64_t>(llvm::divideCeil(type.getIntOrFloatBitWidth(), 8));
}

/// offload = optimizer: the bytes the step copies to the host (gradient
/// shards, and the clipping coefficient when it clips) and back (parameter
/// shards in param_dtype).
static void readOffloadTraffic(ManifestAttr manifest, ArenaFigures &plan) {
  plan.hostArenaBytes = manifest.getHostArenaBytes();
  bool offloaded = false;
  for (ManifestUnitAttr unit : manifest.getUnits()) {
    UnitHostAttr host = unit.getHost();
    if (!host)
      continue;
    offloaded = true;
    plan.toHostBytes += shardBytes(host.getGradDtype(), unit.getShardNumel());
    plan.toDeviceBytes += shardBytes(unit.getParamDtype(), unit.getShardNumel());
  }
  if (offloaded && manifest.getPlan().getClipGradNorm().convertToDouble() > 0)
    plan.toHostBytes += sizeof(float);
}

std::optional<ArenaFigures> ArenaFigures::fromManifest(ManifestAttr manifest) {
  TransientPlanAttr transient = manifest ? manifest.getTransient() : TransientPlanAttr();
  if (!transient)
    return std::nullopt;
  ArenaFigures plan;
  plan.arenaBytes = manifest.getArenaBytes();
  plan.persistentBytes = manifest.getPersistentBytes();
  readTransient(transient, plan);
  if (RecomputeAttr recompute = manifest.getRecompute())
    plan.recompute = recompute;
  readOffloadTraffic(manifest, plan);
  return plan;
}
