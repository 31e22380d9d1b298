//===- TrainingStepPipeline.cpp - model file to a step, any target --------===//

#include "Pipelines/TrainingStepPipeline.h"

#include "fsdp/Codegen/Common/Passes.h"
#include "fsdp/Conversion/Passes.h"
#include "fsdp/Transforms/Passes.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void mlir::fsdp::buildBufferPlanPipeline(OpPassManager &pm, const PipelineTarget &target,
                                         bool forwardOnly) {
  // fsdp: the sharded step, bound to the runtime's arena, then compute in
  // linalg.
  pm.addPass(createFSDPFormUnitsPass());
  pm.addPass(createFSDPSplitTensorsPass());
  pm.addPass(createFSDPPartitionPass());
  pm.addPass(createFSDPSplitSequencePass());
  pm.addPass(createFSDPAutodiffPass(FSDPAutodiffPassOptions{forwardOnly}));
  pm.addPass(createFSDPRematPass());
  pm.addPass(createFSDPInsertCollectivesPass());
  pm.addPass(createFSDPLowerPrecisionPass());
  pm.addPass(createFSDPAccumulateMicroBatchesPass());
  pm.addPass(createFSDPHoistTensorCollectivesPass());
  pm.addPass(createConvertFSDPToRuntimePass(
      ConvertFSDPToRuntimePassOptions{/*deviceArena=*/target.hasDeviceArena()}));
  target.addRuntimeBoundPasses(pm, forwardOnly);
  pm.addPass(createConvertFSDPToLinalgPass(
      ConvertFSDPToLinalgPassOptions{/*sortScatterPositions=*/target.sortsScatterPositions()}));
  target.addLinalgPasses(pm);
  pm.addPass(createFSDPFuseElementwisePass());
  // No CSE before bufferization: merging identical zero-filled tensors would
  // make products share an output and force copies.
  pm.addPass(createCanonicalizerPass());

  target.addTensorPasses(pm);
  // A value computed only to be copied into a buffer (a gradient into its
  // unit's flat gradient, a converted shard) is computed there instead.
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion = bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  pm.addPass(createCSEPass());
  pm.addPass(createFSDPLowerGemmsPass(FSDPLowerGemmsPassOptions{target.fusesBias()}));
  target.addBufferPasses(pm);
  // Every buffer in the arena at a planned offset: nothing to deallocate.
  pm.addPass(createFSDPAssignBuffersPass());
  pm.addPass(createFSDPRecordStepFlopsPass());
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

void mlir::fsdp::buildLoweringPipeline(OpPassManager &pm, const PipelineTarget &target) {
  target.addLowering(pm);
  pm.addPass(createFSDPSerializeManifestPass());
}

void mlir::fsdp::buildTrainingStepPipeline(OpPassManager &pm, const PipelineTarget &target) {
  buildBufferPlanPipeline(pm, target);
  buildLoweringPipeline(pm, target);
}
