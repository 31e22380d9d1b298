//===- ShardingLayout.cpp - units as flat, padded, sharded buffers --------===//

#include "Analysis/ShardingLayout.h"

#include "fsdprt/ManifestSchema.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::fsdp;

FailureOr<ShardingLayout> ShardingLayout::build(ModuleOp module) {
  auto plan = module->getAttrOfType<PlanAttr>(FSDPDialect::getPlanAttrName());
  if (!plan)
    return module.emitError("the module has no 'fsdp.plan'");
  ShardingLayout layout;
  layout.plan = plan;
  // The plan verified its grid against the strategy's rules.
  layout.shardRanks =
      fsdprt::manifest::shardRanksOf(*strategySpec(plan.getStrategy()), plan.getGrid());
  layout.replicas = plan.getDataRanks() / layout.shardRanks;

  llvm::MapVector<StringRef, UnitLayout> units;
  for (ParamOp param : module.getOps<ParamOp>()) {
    std::optional<StringRef> name = param.getUnit();
    if (!name)
      return param.emitError("parameter has no unit; run fsdp-form-units first");
    UnitLayout &unit = units[*name];
    RankedTensorType type = param.getTensorType();
    if (unit.params.empty()) {
      unit.name = *name;
      unit.elementType = type.getElementType();
      unit.elementBytes = llvm::divideCeil(type.getElementTypeBitWidth(), 8);
      unit.trainable = !param.getFrozen();
    }
    unit.params.push_back({param, unit.numel, type.getNumElements()});
    unit.numel += type.getNumElements();
  }
  for (auto &[name, unit] : units) {
    unit.shardNumel = llvm::alignTo(llvm::divideCeil(unit.numel, layout.shardRanks),
                                    kShardAlignment);
    unit.paddedNumel = unit.shardNumel * layout.shardRanks;
    layout.units.push_back(std::move(unit));
  }
  return layout;
}
