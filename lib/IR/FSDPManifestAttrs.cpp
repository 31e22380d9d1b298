//===- FSDPManifestAttrs.cpp - the step's manifest: verifiers, updates ----===//
//
// The invariants the runtime's reader would otherwise be the first to catch
// (runtime/lib/abi/Manifest.cpp): a pass that builds an inconsistent
// manifest fails here, at the pass, not in a trainer.
//
//===----------------------------------------------------------------------===//

#include "fsdp/IR/FSDPAttrs.h"

#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::fsdp;

static bool isUnitDType(Type type) { return type && (type.isF32() || type.isBF16()); }

LogicalResult ManifestUnitAttr::verify(function_ref<InFlightDiagnostic()> emitError, StringRef name,
                                       Type dtype, bool trainable, int64_t numel,
                                       int64_t shardNumel, int64_t paramOffset,
                                       std::optional<int64_t> gradOffset,
                                       ArrayRef<StateSlotAttr> state, Type paramDtype,
                                       UnitHostAttr host) {
  if (name.empty())
    return emitError() << "a unit needs a name";
  if (!isUnitDType(dtype))
    return emitError() << "unit '" << name << "' is f32 or bf16, got " << dtype;
  if (numel < 1 || shardNumel < 1 || paramOffset < 0 || gradOffset.value_or(0) < 0)
    return emitError() << "unit '" << name
                       << "' needs positive numel and shard_numel and offsets of 0 or more";
  if (!trainable && (gradOffset || !state.empty() || host))
    return emitError() << "frozen unit '" << name << "' has no gradient, state or host regions";
  if (static_cast<bool>(paramDtype) != static_cast<bool>(host))
    return emitError() << "unit '" << name
                       << "': param_dtype and host come together (an offloaded unit)";
  if (paramDtype && !isUnitDType(paramDtype))
    return emitError() << "unit '" << name << "': param_dtype is f32 or bf16, got " << paramDtype;
  return success();
}

ManifestUnitAttr ManifestUnitAttr::withGradOffset(int64_t offset) const {
  return get(getContext(), getName(), getDtype(), getTrainable(), getNumel(), getShardNumel(),
             getParamOffset(), offset, getState(), getParamDtype(), getHost());
}

LogicalResult ManifestInputAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                        ArrayRef<int64_t> shape, Type dtype, StringRef role,
                                        int64_t bound, int64_t offset, int64_t bytes) {
  bool integers = role == "tokens" || role == "classes";
  if (!integers && role != "features" && role != "regression_target")
    return emitError() << "an input's role is features, regression_target, tokens or classes, "
                          "got '"
                       << role << "'";
  if (shape.empty() || offset < 0 || bytes < 0)
    return emitError() << "an input has a batch dimension and a place in the arena";
  if (integers != dtype.isInteger() || (integers && bound < 1))
    return emitError() << "role " << role << " needs "
                       << (integers ? "integers with a positive bound" : "floats") << ", got "
                       << dtype;
  return success();
}

LogicalResult ManifestCollectiveAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                             StringRef kind, StringRef unit) {
  if (kind != "all_gather" && kind != "reduce_scatter" && kind != "all_reduce")
    return emitError() << "a collective is all_gather, reduce_scatter or all_reduce, got '" << kind
                       << "'";
  return success();
}

RecomputeAttr RecomputeAttr::scaled(int64_t factor) const {
  return get(getContext(), getOps() * factor, getProducts() * factor, getProductFlops() * factor,
             getOtherElements() * factor, getStepProductFlops() * factor,
             getAttentionFlops() * factor, getFusedAttentionFlops() * factor);
}

/// Every parameter lies in a unit the manifest names, and no two units share
/// a name.
static LogicalResult verifyMembers(function_ref<InFlightDiagnostic()> emitError,
                                   ArrayRef<ManifestUnitAttr> units,
                                   ArrayRef<ManifestParamAttr> params) {
  llvm::StringSet<> names;
  for (ManifestUnitAttr unit : units)
    if (!names.insert(unit.getName()).second)
      return emitError() << "two units are named '" << unit.getName() << "'";
  for (ManifestParamAttr param : params)
    if (!names.contains(param.getUnit()))
      return emitError() << "parameter '" << param.getName() << "' names no unit of the manifest: '"
                         << param.getUnit() << "'";
  return success();
}

LogicalResult
ManifestAttr::verify(function_ref<InFlightDiagnostic()> emitError, PlanAttr plan,
                     int64_t arenaBytes, int64_t persistentBytes, int64_t hostArenaBytes,
                     int64_t localBatch, int64_t shardRanks, ArrayRef<ManifestUnitAttr> units,
                     ArrayRef<ManifestParamAttr> params, ArrayRef<ManifestInputAttr> inputs,
                     ArrayRef<ManifestCollectiveAttr> collectives,
                     std::optional<int64_t> tokensPerStep, std::optional<int64_t> deviceScalars,
                     RecomputeAttr recompute, TransientPlanAttr transient, StepFlopsAttr stepFlops,
                     DeviceProfileAttr deviceProfile) {
  if (persistentBytes < 0 || persistentBytes > arenaBytes || hostArenaBytes < 0)
    return emitError() << "the arena's persistent part (" << persistentBytes
                       << " bytes) lies within its " << arenaBytes
                       << " bytes, and the host arena is 0 bytes or more";
  if (localBatch < 1)
    return emitError() << "each rank's batch is 1 row or more, got " << localBatch;
  if (shardRanks < 1 || plan.getDataRanks() % shardRanks != 0)
    return emitError() << "shard_ranks " << shardRanks << " divides the plan's "
                       << plan.getDataRanks() << " ranks";
  if (deviceScalars.value_or(0) < 0 || tokensPerStep.value_or(1) < 1)
    return emitError() << "the device scalars lie in the arena, and a step has tokens or none";
  return verifyMembers(emitError, units, params);
}

int64_t ManifestAttr::getBatch() const { return getLocalBatch() * getPlan().getDataRanks(); }

int64_t ManifestAttr::getReplicas() const { return getPlan().getDataRanks() / getShardRanks(); }

ManifestAttr ManifestAttr::withBufferPlan(int64_t arenaBytes, TransientPlanAttr transient,
                                          ArrayRef<ManifestUnitAttr> units) const {
  return get(getContext(), getPlan(), arenaBytes, getPersistentBytes(), getHostArenaBytes(),
             getLocalBatch(), getShardRanks(), units, getParams(), getInputs(), getCollectives(),
             getTokensPerStep(), getDeviceScalars(), getRecompute(), transient, getStepFlops(),
             getDeviceProfile());
}

ManifestAttr ManifestAttr::withStepFlops(StepFlopsAttr flops) const {
  return get(getContext(), getPlan(), getArenaBytes(), getPersistentBytes(), getHostArenaBytes(),
             getLocalBatch(), getShardRanks(), getUnits(), getParams(), getInputs(),
             getCollectives(), getTokensPerStep(), getDeviceScalars(), getRecompute(),
             getTransient(), flops, getDeviceProfile());
}

ManifestAttr ManifestAttr::withDeviceProfile(DeviceProfileAttr profile) const {
  return get(getContext(), getPlan(), getArenaBytes(), getPersistentBytes(), getHostArenaBytes(),
             getLocalBatch(), getShardRanks(), getUnits(), getParams(), getInputs(),
             getCollectives(), getTokensPerStep(), getDeviceScalars(), getRecompute(),
             getTransient(), getStepFlops(), profile);
}
