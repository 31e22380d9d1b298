//===- Bf16Selects.cpp - bf16 selects made integer selects ----------------===//

#include "Bf16Selects.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"

namespace fsdpc {

/// The integer type of `type`'s bits where `type` is bfloat or a vector of
/// bfloat; null otherwise.
static llvm::Type *integerTwinOfBf16(llvm::Type *type) {
  if (!type->getScalarType()->isBFloatTy())
    return nullptr;
  llvm::Type *i16 = llvm::Type::getInt16Ty(type->getContext());
  if (auto *vector = llvm::dyn_cast<llvm::VectorType>(type))
    return llvm::VectorType::get(i16, vector->getElementCount());
  return i16;
}

unsigned selectBf16AsIntegers(llvm::Module &module) {
  llvm::SmallVector<llvm::SelectInst *> selects;
  for (llvm::Function &function : module)
    for (llvm::Instruction &inst : llvm::instructions(function))
      if (auto *select = llvm::dyn_cast<llvm::SelectInst>(&inst))
        if (integerTwinOfBf16(select->getType()))
          selects.push_back(select);
  for (llvm::SelectInst *select : selects) {
    llvm::Type *bits = integerTwinOfBf16(select->getType());
    llvm::IRBuilder<> builder(select);
    llvm::Value *chosen = builder.CreateSelect(
        select->getCondition(), builder.CreateBitCast(select->getTrueValue(), bits),
        builder.CreateBitCast(select->getFalseValue(), bits), select->getName());
    select->replaceAllUsesWith(builder.CreateBitCast(chosen, select->getType()));
    select->eraseFromParent();
  }
  return selects.size();
}

} // namespace fsdpc
