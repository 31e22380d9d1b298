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
    ArenaRegion region{static_cast<int64_t>(llvm::alignTo(end, ArenaLayout::kAlignment)),
                       bytes};
    end = region.offset + bytes;
    return region;
  }
};
} // namespace

ArenaLayout ArenaLayout::build(ModuleOp module, ArrayRef<RankedTensorType> inputs,
                               OptimizerAttrInterface optimizer) {
  ArenaLayout layout;
  Allocator arena;
  for (UnitOp unit : module.getOps<UnitOp>()) {
    UnitRegions regions;
    regions.unit = unit;
    SmallVector<ParamOp> members = unit.getMembers();
    regions.trainable = members.empty() || !members.front().getFrozen();
    layout.units.push_back(std::move(regions));
  }
  // Parameters, then state: a rank's parameter shards are one contiguous
  // block.
  for (UnitRegions &regions : layout.units)
    regions.params = arena.take(tensorBytes(regions.unit.getShardType()));
  for (UnitRegions &regions : layout.units)
    if (regions.trainable)
      for (StringRef slot : optimizer.getStateSlots())
        regions.state.push_back({slot, arena.take(tensorBytes(regions.unit.getShardType()))});
  for (RankedTensorType input : inputs)
    layout.inputs.push_back(arena.take(tensorBytes(input)));
  layout.persistentBytes = llvm::alignTo(arena.end, kAlignment);
  return layout;
}

const UnitRegions &ArenaLayout::of(StringRef unit) const {
  for (const UnitRegions &regions : units)
    if (regions.unit.getSymName() == unit)
      return regions;
  llvm_unreachable("a unit the layout does not know");
}
