//===- Manifest.cpp - the lowered step's facts, as #fsdp.manifest ---------===//

#include "Manifest.h"

#include "Utils/RuntimeABI.h"
#include "fsdp/IR/BufferKinds.h"

#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace mlir::fsdp;

/// The collectives `step` starts, in the order it starts them (one block: no
/// loop or branch runs any twice or not at all), each with its unit.
static SmallVector<ManifestCollectiveAttr> stepCollectives(func::FuncOp step) {
  SmallVector<ManifestCollectiveAttr> collectives;
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
        ManifestCollectiveAttr::get(step.getContext(), kind, unit ? unit.getValue() : ""));
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

/// A unit's entry; `hostGradTypes` as buildManifest's. A trainable unit's
/// grad_offset, in the step's transient buffers, is fsdp-assign-buffers'.
static ManifestUnitAttr manifestUnit(const UnitRegions &regions,
                                     const llvm::StringMap<Type> &hostGradTypes) {
  UnitOp unit = regions.unit;
  MLIRContext *ctx = unit.getContext();
  SmallVector<StateSlotAttr> state;
  for (const StateSlot &slot : regions.state)
    state.push_back(StateSlotAttr::get(ctx, slot.name, slot.region.offset));
  // Offloaded: param_offset is the device's copy in param_dtype; the
  // master, the state and the gradient are in the host arena.
  Type paramDtype;
  UnitHostAttr host;
  if (regions.offloaded()) {
    paramDtype = regions.paramsType;
    // A step without gradients (the evaluation step) names the master's
    // dtype: nothing arrives there.
    Type gradType = hostGradTypes.lookup(unit.getSymName());
    if (!gradType)
      gradType = unit.getShardType().getElementType();
    host = UnitHostAttr::get(ctx, regions.host->master.offset, regions.host->grad.offset, gradType);
  }
  return ManifestUnitAttr::get(ctx, unit.getSymName(), unit.getElementType(), regions.trainable,
                               unit.getNumel(), unit.getShard(), regions.params.offset,
                               /*grad_offset=*/std::nullopt, state, paramDtype, host);
}

/// The entry of `param`, a member of `unit`.
static ManifestParamAttr manifestParam(ParamOp param, UnitOp unit) {
  RankedTensorType type = param.getTensorType();
  return ManifestParamAttr::get(
      param.getContext(), param.getSymName(), type.getShape(), param.getSplitDim(),
      param.getSplitParts().value_or(ArrayRef<int64_t>{}), type.getElementType(), unit.getSymName(),
      !param.getFrozen(), param.getInit(), *param.getOffset());
}

/// The entries of the inputs, with their places in the arena.
static SmallVector<ManifestInputAttr> manifestInputs(ArrayRef<RankedTensorType> inputTypes,
                                                     ArrayRef<InputRole> roles,
                                                     const ArenaLayout &layout) {
  SmallVector<ManifestInputAttr> inputs;
  for (auto [index, type] : llvm::enumerate(inputTypes))
    inputs.push_back(ManifestInputAttr::get(
        type.getContext(), type.getShape(), type.getElementType(), roles[index].role,
        roles[index].bound, layout.inputs[index].offset, layout.inputs[index].bytes));
  return inputs;
}

ManifestAttr mlir::fsdp::buildManifest(PlanAttr plan, const ArenaLayout &layout,
                                       ArrayRef<RankedTensorType> inputTypes,
                                       ArrayRef<InputRole> roles, RecomputeAttr recompute,
                                       const llvm::StringMap<Type> &hostGradTypes,
                                       func::FuncOp step) {
  SmallVector<ManifestUnitAttr> units;
  SmallVector<ManifestParamAttr> params;
  int64_t shardRanks = 1; // the last unit's ranks (1 without units)
  for (const UnitRegions &regions : layout.units) {
    shardRanks = regions.unit.getRanks();
    units.push_back(manifestUnit(regions, hostGradTypes));
  }
  // In declaration order, which a unit's members need not follow: a block's
  // whole parameters lie in a unit of their own beside its cut ones
  // (fsdp-split-tensors).
  auto module = step->getParentOfType<ModuleOp>();
  for (ParamOp param : module.getOps<ParamOp>())
    params.push_back(manifestParam(param, module.lookupSymbol<UnitOp>(*param.getUnit())));
  int64_t localBatch = inputTypes.empty() || inputTypes.front().getRank() == 0
                           ? 1
                           : inputTypes.front().getDimSize(0);
  std::optional<int64_t> deviceScalars;
  if (layout.deviceScalars)
    deviceScalars = layout.deviceScalars->offset;
  return ManifestAttr::get(plan.getContext(), plan, /*arena_bytes=*/layout.persistentBytes,
                           layout.persistentBytes, layout.hostBytes, localBatch, shardRanks, units,
                           params, manifestInputs(inputTypes, roles, layout), stepCollectives(step),
                           tokensPerStep(inputTypes, roles, plan.getDataRanks()), deviceScalars,
                           recompute, /*transient=*/{}, /*step_flops=*/{},
                           /*device_profile=*/{});
}
