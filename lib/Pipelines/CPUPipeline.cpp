//===- CPUPipeline.cpp - model file to LLVM dialect for CPUs --------------===//

#include "fsdp/Pipelines/CPUPipeline.h"

#include "fsdp/Conversion/Passes.h"
#include "fsdp/IR/FSDPDialect.h"
#include "fsdp/Transforms/Passes.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/BufferizationToMemRef/BufferizationToMemRef.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
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

void mlir::fsdp::buildBufferPlanPipeline(OpPassManager &pm, ArenaMemory memory,
                                         bool forwardOnly) {
  // fsdp: the sharded step, bound to the runtime's arena, then compute in
  // linalg.
  pm.addPass(createFSDPFormUnitsPass());
  pm.addPass(createFSDPPartitionPass());
  pm.addPass(createFSDPAutodiffPass(FSDPAutodiffPassOptions{forwardOnly}));
  pm.addPass(createFSDPRematPass());
  pm.addPass(createFSDPInsertCollectivesPass());
  pm.addPass(createFSDPLowerPrecisionPass());
  pm.addPass(createFSDPAccumulateMicroBatchesPass());
  pm.addPass(createConvertFSDPToRuntimePass(
      ConvertFSDPToRuntimePassOptions{/*deviceArena=*/memory == ArenaMemory::Device}));
  pm.addPass(createConvertFSDPToLinalgPass());
  pm.addPass(createFSDPFuseElementwisePass());
  // No CSE before bufferization: merging identical zero-filled tensors would
  // make products share an output and force copies.
  pm.addPass(createCanonicalizerPass());

  // A GPU sums a large tensor in chunks, one block each.
  if (memory == ArenaMemory::Device)
    pm.addPass(createFSDPSplitReductionsPass());
  // A value computed only to be copied into a buffer (a gradient into its
  // unit's flat gradient, a converted shard) is computed there instead.
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  pm.addPass(createCSEPass());
  // A GPU adds a linear layer's bias in cuBLASLt's epilogue of its product.
  pm.addPass(createFSDPLowerGemmsPass(
      FSDPLowerGemmsPassOptions{/*fuseBias=*/memory == ArenaMemory::Device}));
  if (memory == ArenaMemory::Device)
    pm.addPass(createFSDPSinkHostReadsPass());
  // Every buffer in the arena at a planned offset: nothing to deallocate.
  pm.addPass(createFSDPAssignBuffersPass());
}

void mlir::fsdp::buildHostLLVMPipeline(OpPassManager &pm) {
  // Strided metadata first: a view at a loop's offset (the attention's key
  // blocks) expands to affine.apply, which lower-affine then lowers.
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  // The vector loads and stores of the CUDA target's kernels, run on the CPU.
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  // exp, log and tanh as polynomials of fmas. The fmas must become LLVM's
  // intrinsic (an instruction, vectorisable) before convert-math-to-libm,
  // which would turn each into a call of libm's fmaf; libm keeps what LLVM
  // has no intrinsic for.
  pm.addPass(createFSDPApproximateMathPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  // f32 <-> bf16 as integer arithmetic (round to nearest even): without
  // AVX512-BF16, LLVM would call a scalar libgcc routine per element, which
  // neither vectorises nor exists in every libgcc.
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expand));
  pm.addPass(createArithToLLVMConversionPass());
  ConvertFuncToLLVMPassOptions funcToLLVM;
  // The step's only buffer argument, the arena, is a plain pointer in C.
  funcToLLVM.useBarePtrCallConv = true;
  pm.addPass(createConvertFuncToLLVMPass(funcToLLVM));
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
}

void mlir::fsdp::buildCPUPipeline(OpPassManager &pm, bool outlineKernels) {
  buildBufferPlanPipeline(pm, ArenaMemory::Host);
  buildCPULoweringPipeline(pm, outlineKernels);
}

void mlir::fsdp::buildCPULoweringPipeline(OpPassManager &pm, bool outlineKernels) {
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
      [](OpPassManager &pm) { buildCPUPipeline(pm); });
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
