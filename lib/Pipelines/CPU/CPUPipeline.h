//===- CPUPipeline.h - model file to LLVM dialect for CPUs ------*- C++ -*-===//

#ifndef FSDP_PIPELINES_CPU_CPUPIPELINE_H
#define FSDP_PIPELINES_CPU_CPUPIPELINE_H

#include "Pipelines/TrainingStepPipeline.h"

#include "mlir/IR/DialectRegistry.h"

namespace mlir::fsdp {

/// The CPU target: the arena in host memory, and after the buffer plan each
/// compute op in a function of its own (fsdp-outline-kernels;
/// `outlineKernels = false` leaves the step one function, only to compare),
/// BLAS calls, loops and the LLVM dialect. With `fuseAttention`, bf16
/// attention is the runtime's fused call (fsdp-fuse-attention), as on CUDA.
class CPUPipelineTarget : public PipelineTarget {
public:
  /// `widenBf16Products`: the CPU has no bf16 product instructions
  /// (fsdp-widen-bf16-products).
  explicit CPUPipelineTarget(bool outlineKernels = true, bool fuseAttention = false,
                             bool widenBf16Products = false)
      : outlineKernels(outlineKernels), fuseAttention(fuseAttention),
        widenBf16Products(widenBf16Products) {}

  bool hasDeviceArena() const override { return false; }
  bool fusesBias() const override { return false; }
  bool sortsScatterPositions() const override { return false; }
  void addRuntimeBoundPasses(OpPassManager &pm, bool forwardOnly) const override;
  void addLinalgPasses(OpPassManager &pm) const override;
  void addLowering(OpPassManager &pm) const override;

private:
  bool outlineKernels;
  bool fuseAttention;
  bool widenBf16Products;
};

/// Registers `fsdp-cpu-pipeline` and each of its passes with the pass registry.
void registerCPUPipeline();

/// The dialects, interfaces and translations the CPU pipeline needs.
void registerCPUPipelineDependencies(DialectRegistry &registry);

} // namespace mlir::fsdp

#endif // FSDP_PIPELINES_CPU_CPUPIPELINE_H
