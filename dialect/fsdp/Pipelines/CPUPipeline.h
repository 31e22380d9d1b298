//===- CPUPipeline.h - model file to LLVM dialect for CPUs ------*- C++ -*-===//

#ifndef FSDP_PIPELINES_CPUPIPELINE_H
#define FSDP_PIPELINES_CPUPIPELINE_H

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::fsdp {

/// Everything from a model file to the LLVM dialect for the CPU target: the
/// training step, its arena binding, linalg, fusion, bufferization, BLAS
/// calls, each compute op in a function of its own (fsdp-outline-kernels;
/// `outlineKernels = false` leaves the step one function, only to compare),
/// loops and the LLVM dialect.
void buildCPUPipeline(OpPassManager &pm, bool outlineKernels = true);

/// The CPU pipeline after buildBufferPlanPipeline: what fsdpc runs once it
/// has checked the buffer plan against the memory budget.
void buildCPULoweringPipeline(OpPassManager &pm, bool outlineKernels = true);

/// Where the arena lives: host code may read it directly only on the CPU.
enum class ArenaMemory { Host, Device };

/// The first half of every target's pipeline: up to the step on buffers,
/// every one placed in the arena (fsdp-assign-buffers), whose plan is then in
/// the manifest. `fsdpc --report` stops there. `forwardOnly`: the held-out
/// evaluation step instead (fsdp-autodiff{forward-only}), on the same
/// persistent arena layout.
void buildBufferPlanPipeline(OpPassManager &pm, ArenaMemory memory, bool forwardOnly = false);

/// Loops, arith, math, memrefs and the step's function to the LLVM dialect,
/// for code that runs on the host (the whole CPU step, the CUDA step's host
/// side).
void buildHostLLVMPipeline(OpPassManager &pm);

/// Registers `fsdp-cpu-pipeline` and each of its passes with the pass registry.
void registerCPUPipeline();

/// The dialects, interfaces and translations the CPU pipeline needs.
void registerCPUPipelineDependencies(DialectRegistry &registry);

} // namespace mlir::fsdp

#endif // FSDP_PIPELINES_CPUPIPELINE_H
