//===- PlanEvaluation.cpp - a plan's exact memory and predicted time ------===//

#include "fsdp/Planning/PlanEvaluation.h"

#include "fsdp/Conversion/RuntimeABI.h"
#include "fsdp/IR/FSDPDialect.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace mlir::fsdp;

FailureOr<PlanEvaluation> mlir::fsdp::evaluateBufferPlan(ModuleOp planned,
                                                         const DeviceProfile &profile) {
  namespace json = llvm::json;
  auto global = planned.lookupSymbol<LLVM::GlobalOp>(kManifestGlobal);
  auto text = global ? llvm::dyn_cast_or_null<StringAttr>(global.getValueOrNull()) : StringAttr();
  auto step = planned.lookupSymbol<func::FuncOp>(kStepFunction);
  if (!text || !step)
    return planned.emitError("the compiled step has no manifest or no ") << kStepFunction;
  llvm::Expected<json::Value> manifest = json::parse(text.getValue().rtrim('\0'));
  const json::Object *object = manifest ? manifest->getAsObject() : nullptr;
  const json::Object *transient = object ? object->getObject("transient") : nullptr;
  if (!transient) {
    if (!manifest)
      llvm::consumeError(manifest.takeError());
    return planned.emitError("the manifest has no buffer plan");
  }
  auto get = [](const json::Object *o, StringRef key) { return o->getInteger(key).value_or(0); };

  PlanEvaluation evaluation;
  ArenaFigures &arena = evaluation.arena;
  arena.arenaBytes = get(object, "arena_bytes");
  arena.persistentBytes = get(object, "persistent_bytes");
  arena.transientPeak = get(transient, "peak_bytes");
  arena.activations = get(transient, "activation_bytes") + get(transient, "collective_bytes");
  arena.gathered = get(transient, "gathered_bytes");
  arena.gradients = get(transient, "gradient_bytes");
  arena.gradientShards = get(transient, "gradient_shard_bytes");
  json::Object fields;
  for (StringRef key : {"arena_bytes", "persistent_bytes", "transient", "recompute"})
    if (const json::Value *value = object->get(key))
      fields[key] = *value;
  llvm::raw_string_ostream(evaluation.arenaJson) << json::Value(std::move(fields));

  evaluation.grid = {std::max<int64_t>(1, get(object, "replicas")),
                     std::max<int64_t>(1, get(object, "shard_ranks"))};
  evaluation.cost = predictStepCost(step, profile, evaluation.grid);
  for (TimedOp &op : evaluation.cost.ops)
    op.op = nullptr;
  return evaluation;
}

FailureOr<PlanEvaluation> mlir::fsdp::evaluatePlan(ModuleOp model, PlanAttr plan,
                                                   ArenaMemory memory,
                                                   const DeviceProfile &profile) {
  OwningOpRef<ModuleOp> copy = model.clone();
  if (plan)
    (*copy)->setAttr(FSDPDialect::getPlanAttrName(), plan);
  PassManager pm(model.getContext());
  buildBufferPlanPipeline(pm, memory);
  if (failed(pm.run(*copy)))
    return failure();
  FailureOr<PlanEvaluation> evaluation = evaluateBufferPlan(*copy, profile);
  if (succeeded(evaluation))
    evaluation->plan = plan ? plan : model->getAttrOfType<PlanAttr>(FSDPDialect::getPlanAttrName());
  return evaluation;
}
