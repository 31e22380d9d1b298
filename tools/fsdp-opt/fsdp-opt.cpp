//===- fsdp-opt.cpp - the fsdp pass driver --------------------------------===//
//
// Like mlir-opt, restricted to what FSDP-MLIR models use: the fsdp dialect,
// the upstream dialects a model file holds, and the passes of the pipeline.
//
//===----------------------------------------------------------------------===//

#include "Pipelines/CPU/CPUPipeline.h"
#include "Pipelines/CUDA/CUDAPipeline.h"
#include "TestPasses.h"
#include "fsdp/Conversion/Passes.h"
#include "fsdp/IR/FSDPDialect.h"
#include "fsdp/Planning/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  // The fsdp dialect and the upstream dialects its lowerings produce.
  registry.insert<mlir::fsdp::FSDPDialect, mlir::arith::ArithDialect,
                  mlir::bufferization::BufferizationDialect, mlir::func::FuncDialect,
                  mlir::linalg::LinalgDialect, mlir::LLVM::LLVMDialect,
                  mlir::math::MathDialect, mlir::memref::MemRefDialect,
                  mlir::scf::SCFDialect, mlir::tensor::TensorDialect>();

  mlir::fsdp::registerCUDAPipelineDependencies(registry);

  mlir::fsdp::registerCPUPipeline();
  mlir::fsdp::registerCUDAPipeline();
  mlir::fsdp::registerFSDPPlanningPasses();
  mlir::fsdp::test::registerTestLaunchToLoopsPass();
  mlir::fsdp::test::registerTestLaunchSummaryPass();
  mlir::fsdp::test::registerTestCheckStreamOrderPass();
  mlir::registerSymbolDCEPass();

  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "FSDP-MLIR optimizer driver\n", registry));
}
