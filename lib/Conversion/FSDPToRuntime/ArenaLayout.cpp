//===- ArenaLayout.cpp - where the step's persistent tensors live ---------===//

#include "ArenaLayout.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::fsdp;

int64_t mlir::fsdp::elementBytes(Type elementType) {
  return llvm::divideCeil(elementType.getIntOrFloatBitWidth(), 8);
}

int64_t mlir::fsdp::tensorBytes(RankedTensorType type) {
  return type.getNumElements() * elementBytes(type.getElementType());
}

int64_t mlir::fsdp::paramByteOffset(ParamOp param) {
  return *param.getOffset() * elementBytes(param.getTensorType().getElementType());
}

namespace {
/// Hands out aligned regions one after the other.
struct Allocator {
  int64_t end = 0;
  ArenaRegion take(int64_t bytes) {
    ArenaRegion region{static_cast<int64_t>(llvm::alignTo(end, kArenaAlignment)), bytes};
    end = region.offset + bytes;
    return region;
  }
};
} // namespace

ArenaLayout ArenaLayout::build(ModuleOp module, ArrayRef<RankedTensorType> inputs,
                               PlanAttr plan, bool deviceArena) {
  ArenaLayout layout;
  Allocator arena, host;
  MLIRContext *ctx = module.getContext();
  bool offload = plan.getOffload() == Offload::Optimizer;
  Type paramDtype = plan.getParamDtype() == DType::BF16 ? Type(BFloat16Type::get(ctx))
                                                        : Type(Float32Type::get(ctx));
  for (UnitOp unit : module.getOps<UnitOp>()) {
    UnitRegions regions;
    regions.unit = unit;
    SmallVector<ParamOp> members = unit.getMembers();
    regions.trainable = members.empty() || !members.front().getFrozen();
    regions.paramsType = unit.getElementType();
    // Frozen units have no optimizer: nothing to offload.
    if (offload && regions.trainable) {
      regions.host.emplace();
      regions.paramsType = paramDtype;
    }
    layout.units.push_back(std::move(regions));
  }
  // Parameters, then state: a rank's parameter shards are one contiguous
  // block, in each arena.
  for (UnitRegions &regions : layout.units) {
    RankedTensorType shard = regions.unit.getShardType();
    regions.params = arena.take(tensorBytes(shard.clone(regions.paramsType)));
    if (regions.offloaded())
      regions.host->master = host.take(tensorBytes(shard));
  }
  for (UnitRegions &regions : layout.units)
    if (regions.trainable)
      for (StringRef slot : plan.getOptimizer().getStateSlots())
        regions.state.push_back(
            {slot, (regions.offloaded() ? host : arena)
                       .take(tensorBytes(regions.unit.getShardType()))});
  for (UnitRegions &regions : layout.units) {
    if (!regions.offloaded())
      continue;
    RankedTensorType shard = regions.unit.getShardType();
    regions.host->grad = host.take(tensorBytes(shard));
    if (regions.paramsType != shard.getElementType())
      regions.host->rounded = host.take(tensorBytes(shard.clone(regions.paramsType)));
  }
  for (RankedTensorType input : inputs)
    layout.inputs.push_back(arena.take(tensorBytes(input)));
  if (deviceArena)
    layout.deviceScalars = arena.take(kScalarBytes);
  layout.persistentBytes = llvm::alignTo(arena.end, kArenaAlignment);
  if (offload) {
    layout.hostCoefficient = host.take(sizeof(float));
    layout.hostBytes = llvm::alignTo(host.end, kArenaAlignment);
  }
  return layout;
}

const UnitRegions &ArenaLayout::of(StringRef unit) const {
  for (const UnitRegions &regions : units)
    if (regions.unit.getSymName() == unit)
      return regions;
  llvm_unreachable("a unit the layout does not know");
}
