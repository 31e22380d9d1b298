//===- fsdp-opt.cpp - the fsdp pass driver --------------------------------===//
//
// Like mlir-opt, restricted to what FSDP-MLIR models use: the fsdp dialect,
// the upstream dialects a model file holds, and the passes of the pipeline.
//
//===----------------------------------------------------------------------===//

#include "fsdp/Conversion/Passes.h"
#include "fsdp/IR/FSDPDialect.h"
#include "fsdp/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<mlir::fsdp::FSDPDialect, mlir::func::FuncDialect,
                  mlir::arith::ArithDialect>();

  mlir::fsdp::registerFSDPPasses();
  mlir::fsdp::registerFSDPConversionPasses();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();

  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "FSDP-MLIR optimizer driver\n", registry));
}
