//===- TrainingStepPipeline.h - model file to a step, any target -*- C++ -*-===//
//
// One pipeline core for every target: the model-level passes, linalg,
// bufferization and the buffer plan are the same for the CPU and CUDA; a
// target (a PipelineTarget) adds its passes at the few points where they
// differ, and its lowering after the buffer plan. No builder here asks which
// target it builds for.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_PIPELINES_TRAININGSTEPPIPELINE_H
#define FSDP_PIPELINES_TRAININGSTEPPIPELINE_H

#include "mlir/Pass/PassManager.h"

namespace mlir::fsdp {

/// What a target adds to the shared pipeline.
class PipelineTarget {
public:
  virtual ~PipelineTarget() = default;

  /// Whether the arena lives in device memory, where host code may not read
  /// it (convert-fsdp-to-runtime{device-arena}); offload is possible there.
  virtual bool hasDeviceArena() const = 0;
  /// Whether a linear layer's bias is added in its product's epilogue
  /// (fsdp-lower-gemms{fuse-bias}).
  virtual bool fusesBias() const = 0;
  /// Whether a scatter-add (the embedding gradient) sorts its positions, so
  /// that every step of it is parallel (convert-fsdp-to-linalg{sort-scatter-
  /// positions}).
  virtual bool sortsScatterPositions() const = 0;
  /// Passes on the step's model ops once it is bound to the runtime, before
  /// they become linalg (the CUDA target's fused attention); `forwardOnly`
  /// for the evaluation step.
  virtual void addRuntimeBoundPasses(OpPassManager &pm, bool forwardOnly) const {}
  /// Passes on the step's linalg ops before elementwise fusion (the CPU's
  /// bf16 products widened where it has no bf16 instructions).
  virtual void addLinalgPasses(OpPassManager &pm) const {}
  /// Passes on the step's tensors just before bufferization.
  virtual void addTensorPasses(OpPassManager &pm) const {}
  /// Passes on the step's buffers before they are placed in the arena.
  virtual void addBufferPasses(OpPassManager &pm) const {}
  /// Everything after the buffer plan, to the LLVM dialect.
  virtual void addLowering(OpPassManager &pm) const = 0;
};

/// The first half of every target's pipeline: up to the step on buffers,
/// every one placed in the arena (fsdp-assign-buffers), whose plan is then in
/// the manifest. `fsdpc --report` stops there. `forwardOnly`: the held-out
/// evaluation step instead (fsdp-autodiff{forward-only}), on the same
/// persistent arena layout.
void buildBufferPlanPipeline(OpPassManager &pm, const PipelineTarget &target,
                             bool forwardOnly = false);

/// The second half: the target's lowering to the LLVM dialect, then the
/// step's manifest written for the trainer (fsdp-serialize-manifest), what
/// fsdpc runs once it has recorded its device profile in the manifest.
void buildLoweringPipeline(OpPassManager &pm, const PipelineTarget &target);

/// The whole pipeline: a model file to the LLVM dialect of the target's
/// training step.
void buildTrainingStepPipeline(OpPassManager &pm, const PipelineTarget &target);

/// Loops, arith, math, memrefs and the step's function to the LLVM dialect,
/// for code that runs on the host (the whole CPU step, the CUDA step's host
/// side).
void buildHostLLVMPipeline(OpPassManager &pm);

} // namespace mlir::fsdp

#endif // FSDP_PIPELINES_TRAININGSTEPPIPELINE_H
