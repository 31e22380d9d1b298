//===- ArenaFigures.cpp - a compiled step's arena, from its manifest ------===//

#include "Analysis/ArenaFigures.h"

#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace mlir::fsdp;
namespace json = llvm::json;

std::optional<ArenaFigures> ArenaFigures::fromManifest(llvm::StringRef text) {
  llvm::Expected<json::Value> value = json::parse(text);
  if (!value) {
    llvm::consumeError(value.takeError());
    return std::nullopt;
  }
  const json::Object *object = value->getAsObject();
  const json::Object *transient = object ? object->getObject("transient") : nullptr;
  if (!transient)
    return std::nullopt;
  auto get = [](const json::Object *o, StringRef key) {
    return o->getInteger(key).value_or(0);
  };
  ArenaFigures plan;
  plan.arenaBytes = get(object, "arena_bytes");
  plan.persistentBytes = get(object, "persistent_bytes");
  plan.transientPeak = get(transient, "peak_bytes");
  plan.liveBytes = get(transient, "live_bytes");
  plan.activations = get(transient, "activation_bytes") + get(transient, "collective_bytes");
  plan.gathered = get(transient, "gathered_bytes");
  plan.gradients = get(transient, "gradient_bytes");
  plan.gradientShards = get(transient, "gradient_shard_bytes");
  plan.buffers = get(transient, "buffers");
  if (const json::Object *dtypes = transient->getObject("dtype_bytes"))
    for (const auto &[dtype, bytes] : *dtypes)
      plan.dtypeBytes[dtype.str()] = bytes.getAsInteger().value_or(0);
  if (const json::Object *recompute = object->getObject("recompute")) {
    plan.recompute.emplace();
    for (StringRef key :
         {"ops", "products", "product_flops", "other_elements", "step_product_flops"})
      (*plan.recompute)[key.str()] = get(recompute, key);
  }
  plan.hostArenaBytes = get(object, "host_arena_bytes");
  auto elementBytes = [](std::optional<StringRef> dtype) { return dtype == "bf16" ? 2 : 4; };
  bool offloaded = false;
  if (const json::Array *units = object->getArray("units"))
    for (const json::Value &entry : *units) {
      const json::Object *unit = entry.getAsObject();
      const json::Object *host = unit ? unit->getObject("host") : nullptr;
      if (!host)
        continue;
      offloaded = true;
      int64_t elements = get(unit, "shard_numel");
      plan.toHostBytes += elements * elementBytes(host->getString("grad_dtype"));
      plan.toDeviceBytes += elements * elementBytes(unit->getString("param_dtype"));
    }
  if (offloaded && object->getNumber("clip_grad_norm").value_or(0) > 0)
    plan.toHostBytes += sizeof(float);
  return plan;
}
