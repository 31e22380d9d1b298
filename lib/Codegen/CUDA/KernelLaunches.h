//===- KernelLaunches.h - Each outlined kernel and its launches -*- C++ -*-===//
//
// The passes that change an outlined kernel's signature or attributes
// (fsdp-cuda-annotate-kernel-arguments, fsdp-cuda-narrow-kernel-indices) decide from
// every launch of it: what each one passes.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_CODEGEN_CUDA_KERNELLAUNCHES_H
#define FSDP_CODEGEN_CUDA_KERNELLAUNCHES_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/MapVector.h"

namespace mlir::fsdp {

/// The launches of each kernel of `module`, kernels in the order of their
/// first launch.
inline llvm::MapVector<gpu::GPUFuncOp, SmallVector<gpu::LaunchFuncOp>>
launchesByKernel(ModuleOp module) {
  SymbolTableCollection symbols;
  llvm::MapVector<gpu::GPUFuncOp, SmallVector<gpu::LaunchFuncOp>> launches;
  module.walk([&](gpu::LaunchFuncOp launch) {
    if (auto kernel = symbols.lookupNearestSymbolFrom<gpu::GPUFuncOp>(launch, launch.getKernel()))
      launches[kernel].push_back(launch);
  });
  return launches;
}

} // namespace mlir::fsdp

#endif // FSDP_CODEGEN_CUDA_KERNELLAUNCHES_H
