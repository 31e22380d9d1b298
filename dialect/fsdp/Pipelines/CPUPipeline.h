//===- CPUPipeline.h - model file to LLVM dialect for CPUs ------*- C++ -*-===//

#ifndef FSDP_PIPELINES_CPUPIPELINE_H
#define FSDP_PIPELINES_CPUPIPELINE_H

#include "fsdp/Pipelines/TrainingStepPipeline.h"

#include "mlir/IR/DialectRegistry.h"

namespace mlir::fsdp {

/// The CPU target: the arena in host memory, and after the buffer plan each
/// compute op in a function of its own (fsdp-outline-kernels;
/// `outlineKernels = false` leaves the step one function, only to compare),
/// BLAS calls, loops and the LLVM dialect.
class CPUPipelineTarget : public PipelineTarget {
public:
  explicit CPUPipelineTarget(bool outlineKernels = true) : outlineKernels(outlineKernels) {}

  bool hasDeviceArena() const override { return false; }
  bool fusesBias() const override { return false; }
  void addLowering(OpPassManager &pm) const override;

private:
  bool outlineKernels;
};

/// Registers `fsdp-cpu-pipeline` and each of its passes with the pass registry.
void registerCPUPipeline();

/// The dialects, interfaces and translations the CPU pipeline needs.
void registerCPUPipelineDependencies(DialectRegistry &registry);

} // namespace mlir::fsdp

#endif // FSDP_PIPELINES_CPUPIPELINE_H
