//===- ArenaFigures.cpp - a compiled step's arena, from its manifest ------===//

#include "Analysis/ArenaFigures.h"

#include "fsdprt/ManifestSchema.h"

#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace mlir::fsdp;
namespace json = llvm::json;

namespace schema = fsdprt::manifest;

/// An integer field of `object`, 0 when absent (a manifest without offload
/// has no host arena, a plan without remat no recompute).
static int64_t integerField(const json::Object &object, const schema::Field &field) {
  return object.getInteger(field.key).value_or(0);
}

/// The bytes of a shard of `elements` in the dtype `field` names.
static int64_t dtypeFieldBytes(const json::Object &object, const schema::Field &field,
                               int64_t elements) {
  return elements * (object.getString(field.key) == "bf16" ? 2 : 4);
}

/// The transient buffers live at the peak (fsdp-assign-buffers' `transient`).
static void readTransient(const json::Object &transient, ArenaFigures &plan) {
  using namespace schema::transient;
  plan.transientPeak = integerField(transient, kPeakBytes);
  plan.liveBytes = integerField(transient, kLiveBytes);
  plan.activations =
      integerField(transient, kActivationBytes) + integerField(transient, kCollectiveBytes);
  plan.gathered = integerField(transient, kGatheredBytes);
  plan.gradients = integerField(transient, kGradientBytes);
  plan.gradientShards = integerField(transient, kGradientShardBytes);
  plan.buffers = integerField(transient, kBuffers);
  if (const json::Object *dtypes = transient.getObject(kDtypeBytes.key))
    for (const auto &[dtype, bytes] : *dtypes)
      plan.dtypeBytes[dtype.str()] = bytes.getAsInteger().value_or(0);
}

/// What fsdp-remat recorded, for the report.
static std::map<std::string, int64_t> readRecompute(const json::Object &recompute) {
  using namespace schema::recompute;
  std::map<std::string, int64_t> counts;
  for (const schema::Field &field :
       {kOps, kProducts, kProductFlops, kOtherElements, kStepProductFlops})
    counts[field.key] = integerField(recompute, field);
  return counts;
}

/// offload = optimizer: the bytes the step copies to the host (gradient
/// shards, and the clipping coefficient when it clips) and back (parameter
/// shards in param_dtype).
static void readOffloadTraffic(const json::Object &manifest, ArenaFigures &plan) {
  plan.hostArenaBytes = integerField(manifest, schema::root::kHostArenaBytes);
  bool offloaded = false;
  if (const json::Array *units = manifest.getArray(schema::root::kUnits.key))
    for (const json::Value &entry : *units) {
      const json::Object *unit = entry.getAsObject();
      const json::Object *host = unit ? unit->getObject(schema::unit::kHost.key) : nullptr;
      if (!host)
        continue;
      offloaded = true;
      int64_t elements = integerField(*unit, schema::unit::kShardNumel);
      plan.toHostBytes += dtypeFieldBytes(*host, schema::unit_host::kGradDtype, elements);
      plan.toDeviceBytes += dtypeFieldBytes(*unit, schema::unit::kParamDtype, elements);
    }
  if (offloaded && manifest.getNumber(schema::root::kClipGradNorm.key).value_or(0) > 0)
    plan.toHostBytes += sizeof(float);
}

std::optional<ArenaFigures> ArenaFigures::fromManifest(llvm::StringRef text) {
  llvm::Expected<json::Value> value = json::parse(text);
  if (!value) {
    llvm::consumeError(value.takeError());
    return std::nullopt;
  }
  const json::Object *object = value->getAsObject();
  const json::Object *transient =
      object ? object->getObject(schema::root::kTransient.key) : nullptr;
  if (!transient)
    return std::nullopt;
  ArenaFigures plan;
  plan.arenaBytes = integerField(*object, schema::root::kArenaBytes);
  plan.persistentBytes = integerField(*object, schema::root::kPersistentBytes);
  readTransient(*transient, plan);
  if (const json::Object *recompute = object->getObject(schema::root::kRecompute.key))
    plan.recompute = readRecompute(*recompute);
  readOffloadTraffic(*object, plan);
  return plan;
}
