//===- Manifest.cpp - the JSON document the runtime reads -----------------===//

#include "Manifest.h"

#include "Utils/RuntimeABI.h"
#include "fsdp/IR/BufferKinds.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace mlir::fsdp;
namespace json = llvm::json;

static StringRef dtypeName(Type type) {
  if (type.isF32())
    return "f32";
  if (type.isBF16())
    return "bf16";
  if (type.isInteger(32))
    return "i32";
  return "i64";
}

static json::Array shapeOf(RankedTensorType type) {
  json::Array shape;
  for (int64_t dim : type.getShape())
    shape.push_back(dim);
  return shape;
}

static double toDouble(const llvm::APFloat &value) { return value.convertToDouble(); }

static json::Object initializerOf(InitializerAttrInterface init) {
  return llvm::TypeSwitch<Attribute, json::Object>(init)
      .Case([](ZerosAttr) { return json::Object{{"kind", "zeros"}}; })
      .Case([](OnesAttr) { return json::Object{{"kind", "ones"}}; })
      .Case([](ConstantAttr a) {
        return json::Object{{"kind", "constant"}, {"value", toDouble(a.getValue())}};
      })
      .Case([](NormalAttr a) {
        return json::Object{{"kind", "normal"},
                            {"mean", toDouble(a.getMean())},
                            {"std", toDouble(a.getStd())}};
      })
      .Case([](UniformAttr a) {
        return json::Object{{"kind", "uniform"},
                            {"low", toDouble(a.getLow())},
                            {"high", toDouble(a.getHigh())}};
      })
      .Case([](FanInNormalAttr a) {
        return json::Object{{"kind", "fan_in_normal"}, {"scale", toDouble(a.getScale())}};
      })
      .Case([](FanInUniformAttr a) {
        return json::Object{{"kind", "fan_in_uniform"}, {"scale", toDouble(a.getScale())}};
      });
}

static json::Object optimizerOf(OptimizerAttrInterface optimizer) {
  return llvm::TypeSwitch<Attribute, json::Object>(optimizer)
      .Case([](SGDAttr a) {
        return json::Object{{"kind", "sgd"},
                            {"lr", toDouble(a.getLr())},
                            {"momentum", toDouble(a.getMomentum())},
                            {"weight_decay", toDouble(a.getWeightDecay())}};
      })
      .Case([](AdamWAttr a) {
        return json::Object{{"kind", "adamw"},
                            {"lr", toDouble(a.getLr())},
                            {"beta1", toDouble(a.getBeta1())},
                            {"beta2", toDouble(a.getBeta2())},
                            {"eps", toDouble(a.getEps())},
                            {"weight_decay", toDouble(a.getWeightDecay())}};
      });
}

/// The collectives `step` starts, in the order it starts them (one block: no
/// loop or branch runs any twice or not at all), each with its unit.
static json::Array stepCollectives(func::FuncOp step) {
  json::Array collectives;
  step.walk([&](func::CallOp call) {
    StringRef kind = llvm::StringSwitch<StringRef>(call.getCallee())
                         .Case(kAllGatherStart, "all_gather")
                         .Case(kReduceScatterStart, "reduce_scatter")
                         .Case(kAllReduceStart, "all_reduce")
                         .Default("");
    if (kind.empty())
      return;
    auto unit = call->getAttrOfType<StringAttr>(kCollectiveUnitAttr);
    collectives.push_back(json::Object{{"kind", kind}, {"unit", unit ? unit.getValue() : ""}});
  });
  return collectives;
}

/// The tokens of one step, all ranks together, where the model embeds token
/// inputs: the elements of the first such input (each rank's rows of every
/// micro-batch), times the ranks.
static std::optional<int64_t> tokensPerStep(ArrayRef<RankedTensorType> inputTypes,
                                            ArrayRef<InputRole> roles, int64_t world) {
  for (auto [type, role] : llvm::zip_equal(inputTypes, roles))
    if (role.role == "tokens")
      return type.getNumElements() * world;
  return std::nullopt;
}

/// A unit's entry; `hostGradTypes` as buildManifest's.
static json::Object manifestUnit(const UnitRegions &regions,
                                 const llvm::StringMap<Type> &hostGradTypes) {
  UnitOp unit = regions.unit;
  json::Object entry{{"name", unit.getSymName()},
                     {"dtype", dtypeName(unit.getElementType())},
                     {"trainable", regions.trainable},
                     {"numel", static_cast<int64_t>(unit.getNumel())},
                     {"shard_numel", static_cast<int64_t>(unit.getShard())},
                     {"param_offset", regions.params.offset}};
  // A trainable unit's grad_offset, in the step's transient buffers, is
  // written by fsdp-assign-buffers.
  if (regions.trainable) {
    json::Array state;
    for (const StateSlot &slot : regions.state)
      state.push_back(json::Object{{"slot", slot.name}, {"offset", slot.region.offset}});
    entry["state"] = std::move(state);
  }
  // Offloaded: param_offset is the device's copy in param_dtype; the
  // master, the state and the gradient are in the host arena.
  if (regions.offloaded()) {
    entry["param_dtype"] = dtypeName(regions.paramsType);
    // A step without gradients (the evaluation step) names the master's
    // dtype: nothing arrives there.
    Type gradType = hostGradTypes.lookup(unit.getSymName());
    if (!gradType)
      gradType = unit.getShardType().getElementType();
    json::Object host{{"master_offset", regions.host->master.offset},
                      {"grad_offset", regions.host->grad.offset},
                      {"grad_dtype", dtypeName(gradType)}};
    entry["host"] = std::move(host);
  }
  return entry;
}

/// The entry of `param`, a member of `unit`.
static json::Object manifestParam(ParamOp param, UnitOp unit) {
  return json::Object{{"name", param.getSymName()},
                      {"shape", shapeOf(param.getTensorType())},
                      {"dtype", dtypeName(param.getTensorType().getElementType())},
                      {"unit", unit.getSymName()},
                      {"trainable", !param.getFrozen()},
                      {"init", initializerOf(param.getInit())},
                      {"unit_offset", static_cast<int64_t>(*param.getOffset())}};
}

/// Appends the entries of the units and of their parameters, in the layout's
/// order, to `units` and `params`; returns the last unit's ranks (1 without
/// units), the manifest's shard_ranks.
static int64_t manifestUnitsAndParams(const ArenaLayout &layout,
                                      const llvm::StringMap<Type> &hostGradTypes,
                                      json::Array &units, json::Array &params) {
  int64_t shardRanks = 1;
  for (const UnitRegions &regions : layout.units) {
    UnitOp unit = regions.unit;
    shardRanks = unit.getRanks();
    units.push_back(manifestUnit(regions, hostGradTypes));
    for (ParamOp param : unit.getMembers())
      params.push_back(manifestParam(param, unit));
  }
  return shardRanks;
}

/// The entries of the inputs, with their places in the arena.
static json::Array manifestInputs(ArrayRef<RankedTensorType> inputTypes, ArrayRef<InputRole> roles,
                                  const ArenaLayout &layout) {
  json::Array inputs;
  for (auto [index, type] : llvm::enumerate(inputTypes)) {
    json::Object input{{"index", static_cast<int64_t>(index)},
                       {"shape", shapeOf(type)},
                       {"dtype", dtypeName(type.getElementType())},
                       {"role", roles[index].role},
                       {"offset", layout.inputs[index].offset},
                       {"bytes", layout.inputs[index].bytes}};
    if (roles[index].bound > 0)
      input["bound"] = roles[index].bound;
    inputs.push_back(std::move(input));
  }
  return inputs;
}

/// The integer fields of what fsdp-remat recorded.
static json::Object manifestRecompute(DictionaryAttr recompute) {
  json::Object counts;
  for (NamedAttribute entry : recompute)
    if (auto count = llvm::dyn_cast<IntegerAttr>(entry.getValue()))
      counts[entry.getName().getValue()] = count.getInt();
  return counts;
}

std::string mlir::fsdp::buildManifest(PlanAttr plan, const ArenaLayout &layout,
                                      ArrayRef<RankedTensorType> inputTypes,
                                      ArrayRef<InputRole> roles, DictionaryAttr recompute,
                                      const llvm::StringMap<Type> &hostGradTypes,
                                      func::FuncOp step) {
  json::Array units, params;
  int64_t shardRanks = manifestUnitsAndParams(layout, hostGradTypes, units, params);
  json::Array grid;
  for (int64_t size : plan.getGrid())
    grid.push_back(size);
  int64_t world = plan.getWorldSize();
  int64_t localBatch = inputTypes.empty() || inputTypes.front().getRank() == 0
                           ? 1
                           : inputTypes.front().getDimSize(0);
  json::Object manifest{{"version", 2},
                        {"arena_bytes", layout.persistentBytes},
                        {"persistent_bytes", layout.persistentBytes},
                        {"host_arena_bytes", layout.hostBytes},
                        {"batch", localBatch * world},
                        {"local_batch", localBatch},
                        {"grid", std::move(grid)},
                        {"strategy", stringifyStrategy(plan.getStrategy())},
                        {"shard_ranks", shardRanks},
                        {"replicas", world / shardRanks},
                        {"optimizer", optimizerOf(plan.getOptimizer())},
                        {"clip_grad_norm", toDouble(plan.getClipGradNorm())},
                        {"allow_tf32", plan.getAllowTf32()},
                        {"units", std::move(units)},
                        {"params", std::move(params)},
                        {"inputs", manifestInputs(inputTypes, roles, layout)},
                        {"collectives", stepCollectives(step)}};
  if (std::optional<int64_t> tokens = tokensPerStep(inputTypes, roles, world))
    manifest["tokens_per_step"] = *tokens;
  if (layout.deviceScalars)
    manifest["device_scalars"] = json::Object{{"offset", layout.deviceScalars->offset}};
  if (recompute)
    manifest["recompute"] = manifestRecompute(recompute);
  std::string text;
  llvm::raw_string_ostream os(text);
  os << json::Value(std::move(manifest));
  return text;
}
