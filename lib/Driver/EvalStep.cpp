//===- EvalStep.cpp - The held-out evaluation step of a trainer -----------===//

#include "EvalStep.h"

#include "Utils/RuntimeABI.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;

namespace mlir::fsdp {

/// A symbol the module only declares: a runtime or library function.
static bool isDeclaration(Operation *op) {
  if (auto function = dyn_cast<LLVM::LLVMFuncOp>(op))
    return function.isExternal();
  return false;
}

LogicalResult mergeEvalStep(ModuleOp trainer, ModuleOp eval) {
  SymbolTable trainerSymbols(trainer);
  SymbolTable evalSymbols(eval);
  if (!evalSymbols.lookup(fsdp::kStepFunction) || !evalSymbols.lookup(fsdp::kManifestGlobal))
    return eval.emitError("the evaluation step's module has no ")
           << fsdp::kStepFunction << " and " << fsdp::kManifestGlobal;
  // Names first, then the move: a rename updates the uses inside `eval`.
  for (Operation &op : llvm::make_early_inc_range(eval.getBody()->getOperations())) {
    auto name = op.getAttrOfType<StringAttr>(SymbolTable::getSymbolAttrName());
    if (!name)
      continue;
    if (isDeclaration(&op)) {
      if (trainerSymbols.lookup(name))
        op.erase();
      continue;
    }
    std::string renamed = name == fsdp::kStepFunction          ? fsdp::kEvalStepFunction.str()
                          : name == fsdp::kManifestGlobal      ? fsdp::kEvalManifestGlobal.str()
                          : name == fsdp::kKernelOriginsGlobal ? fsdp::kEvalKernelOriginsGlobal.str()
                                                               : "fsdp_eval_" + name.str();
    if (trainerSymbols.lookup(renamed))
      return op.emitError("the evaluation step defines '")
             << renamed << "', which the training step defines too";
    if (failed(evalSymbols.rename(&op, StringAttr::get(eval.getContext(), renamed))))
      return failure();
  }
  Block *into = trainer.getBody();
  for (Operation &op : llvm::make_early_inc_range(eval.getBody()->getOperations()))
    op.moveBefore(into, into->end());
  return success();
}

} // namespace mlir::fsdp
