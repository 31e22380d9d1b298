//===- TargetChoice.h - What the flags say of the target --------*- C++ -*-===//
//
// The grid, the CPU, the CUDA pipeline's options and the pipeline's target,
// from fsdpc's flags, each checked with an error naming its flag.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_DRIVER_TARGETCHOICE_H
#define FSDP_DRIVER_TARGETCHOICE_H

#include "CPUTarget.h"
#include "Driver/Driver.h"
#include "Pipelines/CPU/CPUPipeline.h"
#include "Pipelines/CUDA/CUDAPipeline.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <memory>
#include <optional>

namespace mlir::fsdp {

/// The sizes of --grid=N or --grid=R,S.
mlir::FailureOr<llvm::SmallVector<int64_t>> parseGrid(const CompilerOptions &options);

/// The machine --cpu, --cpu-features and -O describe.
CPUTarget cpuTarget(const CompilerOptions &options);

/// The CUDA pipeline's options from the flags, checked (the toolkit's
/// programs too, unless nothing will run them).
mlir::FailureOr<mlir::fsdp::CUDAPipelineOptions> cudaOptions(const CompilerOptions &options,
                                                             const RuntimeLinkage &runtime);

/// bf16 arithmetic (conversions, cuBLAS products) needs sm_80 or newer: an
/// older architecture is refused here rather than by ptxas.
mlir::LogicalResult checkBF16Archs(mlir::ModuleOp module, llvm::ArrayRef<std::string> chips);

/// The target the step is compiled for: the CPU (`cpuBf16Products`: whether
/// it has bf16 product instructions), or CUDA with `cuda`'s options (the
/// defaults where only the buffer plan is compiled: --report), or one of the
/// tests' CUDA targets (--test-launch-summary, --test-kernels-on-cpu).
std::unique_ptr<mlir::fsdp::PipelineTarget>
pipelineTarget(const CompilerOptions &options,
               const std::optional<mlir::fsdp::CUDAPipelineOptions> &cuda, bool cpuBf16Products);

} // namespace mlir::fsdp

#endif // FSDP_DRIVER_TARGETCHOICE_H
