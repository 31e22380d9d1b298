//===- Bf16Selects.cpp - bf16 selects made integer selects ----------------===//

#include "Bf16Selects.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"

namespace mlir::fsdp {

void selectBf16AsIntegers(llvm::Module &module) {
  llvm::SmallVector<llvm::SelectInst *> selects;
  for (llvm::Function &function : module)
    for (llvm::Instruction &inst : llvm::instructions(function))
      if (auto *select = llvm::dyn_cast<llvm::SelectInst>(&inst))
        if (select->getType()->getScalarType()->isBFloatTy())
          selects.push_back(select);
  for (llvm::SelectInst *select : selects) {
    llvm::IRBuilder<> builder(select);
    // i16, or a vector of as many i16.
    llvm::Type *bits = select->getType()->getWithNewType(builder.getInt16Ty());
    llvm::Value *chosen = builder.CreateSelect(
        select->getCondition(), builder.CreateBitCast(select->getTrueValue(), bits),
        builder.CreateBitCast(select->getFalseValue(), bits), select->getName());
    select->replaceAllUsesWith(builder.CreateBitCast(chosen, select->getType()));
    select->eraseFromParent();
  }
}

} // namespace mlir::fsdp
