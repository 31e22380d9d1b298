//===- CUDAPipeline.h - model file to a CUDA trainer's step -----*- C++ -*-===//

#ifndef FSDP_PIPELINES_CUDAPIPELINE_H
#define FSDP_PIPELINES_CUDAPIPELINE_H

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"

#include <string>
#include <vector>

namespace mlir::fsdp {

struct CUDAPipelineOptions {
  /// One cubin per architecture, all in the trainer's fat binary.
  std::vector<std::string> chips = {"sm_80", "sm_90"};
  /// The CUDA toolkit: bin/ptxas, bin/fatbinary, nvvm/libdevice.
  std::string toolkit = "/usr/local/cuda";
  int64_t blockSize = 256;
  /// The host side of each launch in a function of its own
  /// (fsdp-outline-kernels); false only to compare with one step function.
  bool outlineKernels = true;
  /// The plan's approximate_math: the kernels keep libdevice's approximate
  /// square roots instead of correctly rounded ones (fsdp-precise-gpu-math).
  bool approximateMath = false;
  /// Stop at PTX: each gpu.binary holds every architecture's PTX text (fsdpc
  /// --emit=ptx), and no fat binary is packed.
  bool ptx = false;
};

/// Model file to gpu.launch ops: the step on buffers in the arena (device
/// memory), cross-stream events from the buffer plan, and every piece of
/// compute mapped to blocks and threads by the upstream GPU passes.
void buildCUDAKernelPipeline(OpPassManager &pm, const CUDAPipelineOptions &options);

/// buildCUDAKernelPipeline after buildBufferPlanPipeline: what fsdpc runs
/// once it has checked the buffer plan against the memory budget.
void buildCUDAKernelLoweringPipeline(OpPassManager &pm, const CUDAPipelineOptions &options);

/// The launches outlined into one GPU module compiled to a fat binary for
/// every chip, and the host side lowered to the LLVM dialect with calls to the
/// GPU runtime entry points.
void buildCUDADevicePipeline(OpPassManager &pm, const CUDAPipelineOptions &options);

/// Both: model file to the LLVM dialect of a CUDA trainer's step.
void buildCUDAPipeline(OpPassManager &pm, const CUDAPipelineOptions &options);

/// Registers `fsdp-cuda-pipeline` and the passes it adds to the CPU's.
void registerCUDAPipeline();

/// The dialects, interfaces and translations the CUDA pipeline needs.
void registerCUDAPipelineDependencies(DialectRegistry &registry);

} // namespace mlir::fsdp

#endif // FSDP_PIPELINES_CUDAPIPELINE_H
