//===- ParallelCodeGen.h - LLVM's work on several cores ---------*- C++ -*-===//
//
// Once the step is small functions, LLVM's optimisation and code generation
// of one function does not depend on the others: fsdpc -j N splits the LLVM
// module into N parts (llvm::SplitModule), each optimised and compiled to an
// object of its own on a thread of its own, in an LLVM context of its own.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_DRIVER_PARALLELCODEGEN_H
#define FSDP_DRIVER_PARALLELCODEGEN_H

#include "CPUTarget.h"

#include "mlir/Support/LLVM.h"
#include "llvm/IR/Module.h"

#include <memory>
#include <string>

namespace mlir::fsdp {

/// Runs LLVM's optimisation pipeline of level `optLevel` (0-3) on `module`
/// for `machine`.
mlir::LogicalResult optimise(llvm::Module &module, llvm::TargetMachine &machine, unsigned optLevel);

/// Writes `module`'s object file to `path`.
mlir::LogicalResult writeObject(llvm::Module &module, llvm::TargetMachine &machine,
                                llvm::StringRef path);

/// Optimises `module` (level `optLevel`) and compiles it for `target` into
/// `parts` object files, temporary files the caller links and removes: the
/// parts at once, on as many threads. One part is the module as it is. Errors
/// are printed as `fsdpc: error: ...`.
mlir::FailureOr<llvm::SmallVector<std::string>> compileInParts(std::unique_ptr<llvm::Module> module,
                                                               const CPUTarget &target,
                                                               unsigned optLevel, unsigned parts);

} // namespace mlir::fsdp

#endif // FSDP_DRIVER_PARALLELCODEGEN_H
