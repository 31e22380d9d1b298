//===- CPUPipeline.cpp - model file to LLVM dialect for CPUs --------------===//

#include "Pipelines/CPU/CPUPipeline.h"

#include "fsdp/Codegen/Common/Passes.h"
#include "fsdp/Conversion/Passes.h"
#include "fsdp/IR/FSDPDialect.h"
#include "fsdp/Transforms/Passes.h"

#include "mlir/Conversion/BufferizationToMemRef/BufferizationToMemRef.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void mlir::fsdp::CPUPipelineTarget::addRuntimeBoundPasses(OpPassManager &pm,
                                                        bool forwardOnly) const {
  // The CPU runtime's fused attention is exact loops (HostAttention.cpp),
  // slower than the key-block loops' BLAS products: only on request.
  if (fuseAttention)
    pm.addPass(createFSDPFuseAttentionPass(
        FSDPFuseAttentionPassOptions{/*deterministic=*/false, /*quiet=*/forwardOnly}));
}

void mlir::fsdp::CPUPipelineTarget::addLinalgPasses(OpPassManager &pm) const {
  // Without bf16 instructions the runtime would widen each product's
  // operands in passes of their own; the step's loops do it as they go.
  if (widenBf16Products)
    pm.addPass(createFSDPWidenBf16ProductsPass());
}

void mlir::fsdp::CPUPipelineTarget::addLowering(OpPassManager &pm) const {
  pm.addPass(createConvertBufferizationToMemRefPass());
  if (outlineKernels) {
    // Folds the buffers loops carry (a scatter's), so the loops stand alone.
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createFSDPOutlineKernelsPass());
    pm.addPass(createFSDPSplitStepPass());
  }
  pm.addPass(createConvertLinalgToLoopsPass());
  buildHostLLVMPipeline(pm);
}

void mlir::fsdp::registerCPUPipeline() {
  // Every stage by its flag, to run it alone or print the IR after it.
  registerFSDPPasses();
  registerFSDPCodegenPasses();
  registerFSDPConversionPasses();
  registerLinalgPasses();
  bufferization::registerBufferizationPasses();
  memref::registerMemRefPasses();
  registerCanonicalizerPass();
  registerCSEPass();
  registerLowerAffinePass();
  registerArithToLLVMConversionPass();
  arith::registerArithExpandOpsPass();
  registerConvertBufferizationToMemRefPass();
  registerConvertControlFlowToLLVMPass();
  registerConvertFuncToLLVMPass();
  registerConvertMathToLibmPass();
  registerConvertMathToLLVMPass();
  registerFinalizeMemRefToLLVMConversionPass();
  registerReconcileUnrealizedCastsPass();
  registerSCFToControlFlowPass();
  PassPipelineRegistration<>(
      "fsdp-cpu-pipeline",
      "Lowers a model file to the LLVM dialect of a CPU trainer's training step",
      [](OpPassManager &pm) { buildTrainingStepPipeline(pm, CPUPipelineTarget()); });
}

void mlir::fsdp::registerCPUPipelineDependencies(DialectRegistry &registry) {
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(registry);
  linalg::registerBufferizableOpInterfaceExternalModels(registry);
  scf::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
}
