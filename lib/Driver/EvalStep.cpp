//===- EvalStep.cpp - The held-out evaluation step of a trainer -----------===//

#include "EvalStep.h"

#include "Utils/Outlining.h"
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

/// Whether each symbol `function`'s body names is one `symbols` only declares:
/// then the body means the same in any module that declares those alike.
static bool namesOnlyDeclarations(LLVM::LLVMFuncOp function, SymbolTable &symbols) {
  std::optional<SymbolTable::UseRange> uses = SymbolTable::getSymbolUses(&function.getBody());
  return uses && llvm::all_of(*uses, [&](const SymbolTable::SymbolUse &use) {
           Operation *symbol = symbols.lookup(use.getSymbolRef().getRootReference());
           return symbol && isDeclaration(symbol);
         });
}

/// Makes each function `eval` defines that is identical to one `trainer`
/// defines (a kernel of the forward pass, outlined in both steps) a call of
/// the trainer's: LLVM optimises and compiles it once.
static void shareIdenticalFunctions(ModuleOp trainer, ModuleOp eval) {
  SymbolTable trainerSymbols(trainer);
  SymbolTable evalSymbols(eval);
  IdenticalFunctions shared;
  for (auto function : trainer.getOps<LLVM::LLVMFuncOp>())
    if (!function.isExternal() && namesOnlyDeclarations(function, trainerSymbols))
      shared.add(function);
  for (auto function : llvm::make_early_inc_range(eval.getOps<LLVM::LLVMFuncOp>())) {
    if (function.getLinkage() != LLVM::Linkage::Internal ||
        !namesOnlyDeclarations(function, evalSymbols))
      continue;
    FunctionOpInterface same = shared.find(function);
    if (!same)
      continue;
    if (failed(SymbolTable::replaceAllSymbolUses(function, same.getNameAttr(), eval)))
      continue;
    function.erase();
  }
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
  // After the renames, so that a name the trainer's function and an eval
  // function share cannot confuse the two.
  shareIdenticalFunctions(trainer, eval);
  Block *into = trainer.getBody();
  for (Operation &op : llvm::make_early_inc_range(eval.getBody()->getOperations()))
    op.moveBefore(into, into->end());
  return success();
}

} // namespace mlir::fsdp
