//===- Emission.h - What fsdpc writes ---------------------------*- C++ -*-===//
//
// The outputs beside the IR's passes: the pictures of the plan (--timeline,
// --memory-svg), text (MLIR, LLVM IR, each step's PTX) and the trainer,
// linked by the system's C++ driver.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_DRIVER_EMISSION_H
#define FSDP_DRIVER_EMISSION_H

#include "Driver/Driver.h"
#include "Planning/FitSearch.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

namespace mlir::fsdp {

/// --timeline and --memory-svg (with --measured-trace's marks), of the plan
/// compiled.
mlir::LogicalResult writePictures(const CompilerOptions &options,
                                  const mlir::fsdp::PlanEvaluation &planned,
                                  const mlir::fsdp::DeviceProfile &profile,
                                  const std::optional<mlir::fsdp::MemoryBudget> &budget);

/// `write` into the output file, kept only if it returns.
mlir::LogicalResult writeOutput(const CompilerOptions &options,
                                llvm::function_ref<void(llvm::raw_ostream &)> write);

/// Each step's PTX, per GPU module and architecture, into the output file.
mlir::LogicalResult writePtx(const CompilerOptions &options, llvm::ArrayRef<mlir::ModuleOp> steps,
                             llvm::ArrayRef<llvm::StringRef> names);

/// Links the trainer with the system's C++ driver, which knows the C++
/// runtime and start files the trainer's `main` needs: the CUDA backend's
/// archives for a CUDA trainer, the CPU's otherwise.
mlir::LogicalResult linkTrainer(const CompilerOptions &options, const RuntimeLinkage &runtime,
                                llvm::ArrayRef<std::string> objects, bool cudaRuntime);

} // namespace mlir::fsdp

#endif // FSDP_DRIVER_EMISSION_H
