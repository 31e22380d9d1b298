//===- CUDAPipeline.h - model file to a CUDA trainer's step -----*- C++ -*-===//

#ifndef FSDP_PIPELINES_CUDA_CUDAPIPELINE_H
#define FSDP_PIPELINES_CUDA_CUDAPIPELINE_H

#include "Pipelines/TrainingStepPipeline.h"

#include "mlir/IR/DialectRegistry.h"

#include <string>
#include <utility>
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
  /// square roots instead of correctly rounded ones (fsdp-cuda-precise-math).
  bool approximateMath = false;
  /// The plan's deterministic: the fused attention's backward pass uses
  /// cuDNN's deterministic algorithm (fsdp-fuse-attention).
  bool deterministic = false;
  /// bf16 attention as cuDNN's fused calls (fsdp-fuse-attention); false keeps
  /// the key-block loops.
  bool fuseAttention = true;
  /// Where to write the step's kernel table (fsdp-cuda-write-kernel-table),
  /// and the device profile it prices them on; empty: no table.
  std::string kernelTable, kernelTableProfile;
  /// Stop at PTX: each gpu.binary holds every architecture's PTX text (fsdpc
  /// --emit=ptx), and no fat binary is packed.
  bool ptx = false;
};

/// The CUDA target: the arena in device memory; large sums split into a
/// block's chunks before bufferization; biases in cuBLASLt's epilogues; the
/// host's reads of lr and step sunk into the kernels; after the buffer plan,
/// cross-stream events from it and every piece of compute mapped to blocks and
/// threads by the upstream GPU passes (gpu.launch ops), then the device code.
class CUDAPipelineTarget : public PipelineTarget {
public:
  explicit CUDAPipelineTarget(CUDAPipelineOptions options) : options(std::move(options)) {}

  bool hasDeviceArena() const override { return true; }
  bool fusesBias() const override { return true; }
  bool sortsScatterPositions() const override { return true; }
  void addRuntimeBoundPasses(OpPassManager &pm, bool forwardOnly) const override;
  void addTensorPasses(OpPassManager &pm) const override;
  void addBufferPasses(OpPassManager &pm) const override;
  void addLowering(OpPassManager &pm) const override;

  /// After the launches are formed: the launches outlined into one GPU module
  /// compiled to a fat binary for every chip, and the host side lowered to the
  /// LLVM dialect with calls to the GPU runtime's entry points. The tests'
  /// targets run the launches as CPU loops, or summarise them, instead.
  virtual void addDeviceCode(OpPassManager &pm) const;

protected:
  CUDAPipelineOptions options;
};

/// Registers `fsdp-cuda-pipeline` and the passes it adds to the CPU's.
void registerCUDAPipeline();

/// The dialects, interfaces and translations the CUDA pipeline needs.
void registerCUDAPipelineDependencies(DialectRegistry &registry);

} // namespace mlir::fsdp

#endif // FSDP_PIPELINES_CUDA_CUDAPIPELINE_H
