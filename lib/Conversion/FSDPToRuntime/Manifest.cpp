//===- Manifest.cpp - the JSON document the runtime reads -----------------===//

#include "Manifest.h"

#include "Utils/RuntimeABI.h"
#include "fsdp/IR/BufferKinds.h"
#include "fsdprt/ManifestSchema.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace mlir::fsdp;
namespace json = llvm::json;
namespace schema = fsdprt::manifest;

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
  using namespace schema::init;
  return llvm::TypeSwitch<Attribute, json::Object>(init)
      .Case([](ZerosAttr) {
        return json::Object{{kKind.key, "zeros"}};
      })
      .Case([](OnesAttr) {
        return json::Object{{kKind.key, "ones"}};
      })
      .Case([](ConstantAttr a) {
        return json::Object{{kKind.key, "constant"}, {kValue.key, toDouble(a.getValue())}};
      })
      .Case([](NormalAttr a) {
        return json::Object{{kKind.key, "normal"},
                            {kMean.key, toDouble(a.getMean())},
                            {kStd.key, toDouble(a.getStd())}};
      })
      .Case([](UniformAttr a) {
        return json::Object{{kKind.key, "uniform"},
                            {kLow.key, toDouble(a.getLow())},
                            {kHigh.key, toDouble(a.getHigh())}};
      })
      .Case([](FanInNormalAttr a) {
        return json::Object{{kKind.key, "fan_in_normal"}, {kScale.key, toDouble(a.getScale())}};
      })
      .Case([](FanInUniformAttr a) {
        return json::Object{{kKind.key, "fan_in_uniform"}, {kScale.key, toDouble(a.getScale())}};
      });
}

static json::Object optimizerOf(OptimizerAttrInterface optimizer) {
  using namespace schema::optimizer;
  return llvm::TypeSwitch<Attribute, json::Object>(optimizer)
      .Case([](SGDAttr a) {
        return json::Object{{kKind.key, "sgd"},
                            {kLr.key, toDouble(a.getLr())},
                            {kMomentum.key, toDouble(a.getMomentum())},
                            {kWeightDecay.key, toDouble(a.getWeightDecay())}};
      })
      .Case([](AdamWAttr a) {
        return json::Object{{kKind.key, "adamw"},
                            {kLr.key, toDouble(a.getLr())},
                            {kBeta1.key, toDouble(a.getBeta1())},
                            {kBeta2.key, toDouble(a.getBeta2())},
                            {kEps.key, toDouble(a.getEps())},
                            {kWeightDecay.key, toDouble(a.getWeightDecay())}};
      });
}

/// The collectives `step` starts, in the order it starts them (one block: no
/// loop or branch runs any twice or not at all), each with its unit.
static json::Array stepCollectives(func::FuncOp step) {
  using namespace schema::collective;
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
    collectives.push_back(
        json::Object{{kKind.key, kind}, {kUnit.key, unit ? unit.getValue() : ""}});
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
  using namespace schema::unit;
  UnitOp unit = regions.unit;
  json::Object entry{{kName.key, unit.getSymName()},
                     {kDtype.key, dtypeName(unit.getElementType())},
                     {kTrainable.key, regions.trainable},
                     {kNumel.key, static_cast<int64_t>(unit.getNumel())},
                     {kShardNumel.key, static_cast<int64_t>(unit.getShard())},
                     {kParamOffset.key, regions.params.offset}};
  // A trainable unit's grad_offset, in the step's transient buffers, is
  // written by fsdp-assign-buffers.
  if (regions.trainable) {
    json::Array state;
    for (const StateSlot &slot : regions.state)
      state.push_back(json::Object{{schema::state_slot::kSlot.key, slot.name},
                                   {schema::state_slot::kOffset.key, slot.region.offset}});
    entry[kState.key] = std::move(state);
  }
  // Offloaded: param_offset is the device's copy in param_dtype; the
  // master, the state and the gradient are in the host arena.
  if (regions.offloaded()) {
    entry[kParamDtype.key] = dtypeName(regions.paramsType);
    // A step without gradients (the evaluation step) names the master's
    // dtype: nothing arrives there.
    Type gradType = hostGradTypes.lookup(unit.getSymName());
    if (!gradType)
      gradType = unit.getShardType().getElementType();
    json::Object host{{schema::unit_host::kMasterOffset.key, regions.host->master.offset},
                      {schema::unit_host::kGradOffset.key, regions.host->grad.offset},
                      {schema::unit_host::kGradDtype.key, dtypeName(gradType)}};
    entry[kHost.key] = std::move(host);
  }
  return entry;
}

/// The entry of `param`, a member of `unit`.
static json::Object manifestParam(ParamOp param, UnitOp unit) {
  using namespace schema::param;
  return json::Object{{kName.key, param.getSymName()},
                      {kShape.key, shapeOf(param.getTensorType())},
                      {kDtype.key, dtypeName(param.getTensorType().getElementType())},
                      {kUnit.key, unit.getSymName()},
                      {kTrainable.key, !param.getFrozen()},
                      {kInit.key, initializerOf(param.getInit())},
                      {kUnitOffset.key, static_cast<int64_t>(*param.getOffset())}};
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
  using namespace schema::input;
  json::Array inputs;
  for (auto [index, type] : llvm::enumerate(inputTypes)) {
    json::Object input{
        {kIndex.key, static_cast<int64_t>(index)},      {kShape.key, shapeOf(type)},
        {kDtype.key, dtypeName(type.getElementType())}, {kRole.key, roles[index].role},
        {kOffset.key, layout.inputs[index].offset},     {kBytes.key, layout.inputs[index].bytes}};
    if (roles[index].bound > 0)
      input[kBound.key] = roles[index].bound;
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
  using namespace schema::root;
  json::Array units, params;
  int64_t shardRanks = manifestUnitsAndParams(layout, hostGradTypes, units, params);
  json::Array grid;
  for (int64_t size : plan.getGrid())
    grid.push_back(size);
  int64_t world = plan.getWorldSize();
  int64_t localBatch = inputTypes.empty() || inputTypes.front().getRank() == 0
                           ? 1
                           : inputTypes.front().getDimSize(0);
  json::Object manifest{{kVersion.key, schema::kFormatVersion},
                        {kArenaBytes.key, layout.persistentBytes},
                        {kPersistentBytes.key, layout.persistentBytes},
                        {kHostArenaBytes.key, layout.hostBytes},
                        {kBatch.key, localBatch * world},
                        {kLocalBatch.key, localBatch},
                        {kGrid.key, std::move(grid)},
                        {kStrategy.key, stringifyStrategy(plan.getStrategy())},
                        {kShardRanks.key, shardRanks},
                        {kReplicas.key, world / shardRanks},
                        {kOptimizer.key, optimizerOf(plan.getOptimizer())},
                        {kClipGradNorm.key, toDouble(plan.getClipGradNorm())},
                        {kAllowTf32.key, plan.getAllowTf32()},
                        {kUnits.key, std::move(units)},
                        {kParams.key, std::move(params)},
                        {kInputs.key, manifestInputs(inputTypes, roles, layout)},
                        {kCollectives.key, stepCollectives(step)}};
  if (std::optional<int64_t> tokens = tokensPerStep(inputTypes, roles, world))
    manifest[kTokensPerStep.key] = *tokens;
  if (layout.deviceScalars)
    manifest[kDeviceScalars.key] =
        json::Object{{schema::device_scalars::kOffset.key, layout.deviceScalars->offset}};
  if (recompute)
    manifest[kRecompute.key] = manifestRecompute(recompute);
  std::string text;
  llvm::raw_string_ostream os(text);
  os << json::Value(std::move(manifest));
  return text;
}
