//===- CUDAPipeline.cpp - model file to LLVM dialect for NVIDIA GPUs ------===//
//
// The shared pipeline up to the buffer plan, then the upstream GPU path: parallel
// loops mapped to blocks and threads, outlined, lowered to NVVM and compiled
// by the toolkit's ptxas; GEMMs stay cuBLAS calls of the runtime, collectives
// NCCL calls on their own streams, ordered by events from the buffer plan.
//
//===----------------------------------------------------------------------===//

#include "Pipelines/CUDA/CUDAPipeline.h"

#include "Pipelines/CPU/CPUPipeline.h"
#include "fsdp/Codegen/CUDA/Passes.h"
#include "fsdp/Codegen/Common/Passes.h"
#include "fsdp/Conversion/Passes.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/BufferizationToMemRef/BufferizationToMemRef.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/GPUCommon/GPUCommonPass.h"
#include "mlir/Conversion/GPUCommon/GPUToLLVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/SCFToGPU/SCFToGPUPass.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void mlir::fsdp::CUDAPipelineTarget::addRuntimeBoundPasses(OpPassManager &pm,
                                                         bool forwardOnly) const {
  // bf16 attention as cuDNN's fused kernel instead of key-block loops; the
  // evaluation step's compile repeats the training step's forward pass, and
  // its remarks.
  if (!options.fuseAttention)
    return;
  pm.addPass(createFSDPFuseAttentionPass(
      FSDPFuseAttentionPassOptions{options.deterministic, /*quiet=*/forwardOnly}));
}

void mlir::fsdp::CUDAPipelineTarget::addTensorPasses(OpPassManager &pm) const {
  // A GPU sums a large tensor in chunks, one block each.
  pm.addPass(createFSDPSplitReductionsPass());
}

void mlir::fsdp::CUDAPipelineTarget::addBufferPasses(OpPassManager &pm) const {
  pm.addPass(createFSDPSinkHostReadsPass());
  // Before the buffer plan, which then keeps their operands live.
  pm.addPass(createFSDPMarkRowProloguesPass());
}

void mlir::fsdp::CUDAPipelineTarget::addLowering(OpPassManager &pm) const {
  // Where the buffer plan has placed every bias.
  pm.addPass(createFSDPSplitUnalignedBiasesPass());
  pm.addPass(createFSDPInsertStreamEventsPass());
  pm.addPass(createConvertBufferizationToMemRefPass());
  // Folds the buffers loops carry (the attention's key-block loops), so the
  // loops stand alone.
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createFSDPFormKernelsPass(FSDPFormKernelsPassOptions{options.blockSize}));
  pm.addNestedPass<func::FuncOp>(createGpuMapParallelLoopsPass());
  pm.addNestedPass<func::FuncOp>(createConvertParallelLoopToGpuPass());
  // What runs on the host (offload's update tasks) as host loops.
  pm.addPass(createConvertLinalgToLoopsPass());
  // Kernels take each memref as a bare pointer (one parameter, not a
  // descriptor): a view a host loop offsets is made in the kernel instead
  // (here, so that the kernels run on the CPU do it too), and so are the
  // constants a kernel uses (last: a pattern rewrite would hoist them out).
  pm.addPass(createFSDPSinkKernelViewsPass());
  addDeviceCode(pm);
}

void mlir::fsdp::CUDAPipelineTarget::addDeviceCode(OpPassManager &pm) const {
  // Sizes, strides and the index arithmetic on them go into the kernels as
  // constants (no 64-bit division by a kernel argument).
  pm.addNestedPass<func::FuncOp>(createGpuLaunchSinkIndexComputationsPass());
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(createFSDPBundleKernelsPass());
  pm.addPass(createFSDPRecordKernelOriginsPass());
  if (!options.kernelTable.empty())
    pm.addPass(createFSDPWriteKernelTablePass(
        FSDPWriteKernelTablePassOptions{options.kernelTable, options.kernelTableProfile}));
  // What the buffer plan knows of the kernels' pointers (alignment, which
  // overlap) and of their index values (the ranges that fit 32 bits), read
  // while the launches still show the arena's views and the host loops.
  pm.addPass(createFSDPAnnotateKernelArgumentsPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createLowerAffinePass());
  pm.addPass(createFSDPNarrowKernelIndicesPass());
  // Views in kernels (a key block's) as address arithmetic, which
  // convert-gpu-to-nvvm lowers at the kernels' index width.
  pm.addNestedPass<gpu::GPUModuleOp>(memref::createExpandStridedMetadataPass());
  // The host side of each launch in a function of its own, as on the CPU.
  if (options.outlineKernels) {
    FSDPOutlineKernelsPassOptions outline;
    outline.launchOps.push_back(gpu::LaunchFuncOp::getOperationName().str());
    pm.addPass(createFSDPOutlineKernelsPass(outline));
    pm.addPass(createFSDPSplitStepPass());
  }
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  if (!options.approximateMath)
    pm.addPass(createFSDPPreciseGpuMathPass());
  for (const std::string &chip : options.chips) {
    GpuNVVMAttachTargetOptions attach;
    attach.chip = chip;
    attach.optLevel = 3;
    pm.addPass(createGpuNVVMAttachTarget(attach));
  }
  // Bare pointers for memrefs on both sides of each launch (static shapes:
  // fsdp-cuda-sink-kernel-views).
  ConvertGpuOpsToNVVMOpsOptions nvvm;
  nvvm.useBarePtrCallConv = true;
  pm.addNestedPass<gpu::GPUModuleOp>(createConvertGpuOpsToNVVMOps(nvvm));
  pm.addNestedPass<gpu::GPUModuleOp>(createCanonicalizerPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createCSEPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createReconcileUnrealizedCastsPass());

  buildHostLLVMPipeline(pm);
  GpuToLLVMConversionPassOptions toLLVM;
  toLLVM.kernelBarePtrCallConv = true;
  pm.addPass(createGpuToLLVMConversionPass(toLLVM));
  pm.addPass(createReconcileUnrealizedCastsPass());

  GpuModuleToBinaryPassOptions binary;
  binary.toolkitPath = options.toolkit;
  binary.compilationTarget = options.ptx ? "isa" : "bin";
  pm.addPass(createGpuModuleToBinaryPass(binary));
  if (!options.ptx)
    pm.addPass(createFSDPPackFatbinPass(FSDPPackFatbinPassOptions{options.toolkit}));
}

namespace {
struct CUDAPipelineCLOptions : public PassPipelineOptions<CUDAPipelineCLOptions> {
  ListOption<std::string> chips{*this, "chips",
                                llvm::cl::desc("GPU architectures (default sm_80,sm_90)")};
  Option<std::string> toolkit{*this, "toolkit", llvm::cl::desc("The CUDA toolkit's root"),
                              llvm::cl::init("/usr/local/cuda")};
  Option<int64_t> blockSize{*this, "block-size", llvm::cl::desc("Threads per block"),
                            llvm::cl::init(256)};
  Option<bool> approximateMath{
      *this, "approximate-math",
      llvm::cl::desc("Approximate square roots in kernels (the plan's approximate_math)"),
      llvm::cl::init(false)};

  fsdp::CUDAPipelineOptions get() const {
    fsdp::CUDAPipelineOptions options;
    if (!chips.empty())
      options.chips.assign(chips.begin(), chips.end());
    options.toolkit = toolkit;
    options.blockSize = blockSize;
    options.approximateMath = approximateMath;
    return options;
  }
};
} // namespace

void mlir::fsdp::registerCUDAPipeline() {
  registerFSDPCUDAPasses();
  registerGPUPasses();
  registerConvertParallelLoopToGpuPass();
  registerConvertGpuOpsToNVVMOps();
  registerGpuToLLVMConversionPass();
  registerSCFToControlFlowPass();
  PassPipelineRegistration<CUDAPipelineCLOptions>(
      "fsdp-cuda-pipeline",
      "Lowers a model file to the LLVM dialect of a CUDA trainer's training step",
      [](OpPassManager &pm, const CUDAPipelineCLOptions &options) {
        buildTrainingStepPipeline(pm, CUDAPipelineTarget(options.get()));
      });
}

void mlir::fsdp::registerCUDAPipelineDependencies(DialectRegistry &registry) {
  registerCPUPipelineDependencies(registry);
  registry.insert<gpu::GPUDialect, NVVM::NVVMDialect>();
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerGPUDialectTranslation(registry);
  gpu::registerOffloadingLLVMTranslationInterfaceExternalModels(registry);
  registerNVVMDialectTranslation(registry);
  // gpu-to-llvm converts the ops of every dialect that can say how.
  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  registerConvertFuncToLLVMInterface(registry);
  index::registerConvertIndexToLLVMInterface(registry);
  registerConvertMathToLLVMInterface(registry);
  registerConvertMemRefToLLVMInterface(registry);
  registerConvertNVVMToLLVMInterface(registry);
  ub::registerConvertUBToLLVMInterface(registry);
  vector::registerConvertVectorToLLVMInterface(registry);
  NVVM::registerConvertGpuToNVVMInterface(registry);
  gpu::registerConvertGpuToLLVMInterface(registry);
}
