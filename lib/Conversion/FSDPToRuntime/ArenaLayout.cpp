//===- ArenaLayout.cpp - where the step's persistent tensors live ---------===//

#include "ArenaLayout.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::fsdp;

int64_t mlir::fsdp::tensorBytes(RankedTensorType type) {
  return type.getNumElements() * llvm::divideCeil(type.getElementTypeBitWidth(), 8);
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

ArenaLayout ArenaLayout::build(ModuleOp module, func::FuncOp step, unsigned numInputs,
                               OptimizerAttrInterface optimizer) {
  ArenaLayout layout;
  Allocator arena;
  SmallVector<ParamOp> updated;
  step.walk([&](UpdateOp update) {
    updated.push_back(SymbolTable::lookupNearestSymbolFrom<ParamOp>(update,
                                                                   update.getParamAttr()));
  });
  for (ParamOp param : module.getOps<ParamOp>())
    layout.params[param] = arena.take(tensorBytes(param.getTensorType()));
  for (ParamOp param : updated)
    layout.grads[param] = arena.take(tensorBytes(param.getTensorType()));
  for (ParamOp param : updated)
    for (StringRef slot : optimizer.getStateSlots())
      layout.state.push_back({param, slot, arena.take(tensorBytes(param.getTensorType()))});
  for (unsigned i = 0; i < numInputs; ++i)
    layout.inputs.push_back(arena.take(
        tensorBytes(llvm::cast<RankedTensorType>(step.getArgumentTypes()[i]))));
  layout.totalBytes = llvm::alignTo(arena.end, kAlignment);
  return layout;
}

SmallVector<const StateSlot *> ArenaLayout::stateOf(ParamOp param) const {
  SmallVector<const StateSlot *> slots;
  for (const StateSlot &slot : state)
    if (slot.param == param)
      slots.push_back(&slot);
  return slots;
}
