//===- fsdpc.cpp - the FSDP-MLIR compiler driver --------------------------===//
//
// The command line of lib/Driver (fsdp/Driver/Driver.h), with where this
// build put the runtime that trainers link with.
//
//===----------------------------------------------------------------------===//

#include "RuntimeLinkage.h"

#include "Driver/Driver.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"

namespace {

/// The runtime's archives and link flags, as CMake wrote them.
mlir::fsdp::RuntimeLinkage runtimeOfThisBuild() {
  mlir::fsdp::RuntimeLinkage runtime;
  runtime.mainLibrary = FSDP_RUNTIME_MAIN_LIBRARY;
  runtime.library = FSDP_RUNTIME_LIBRARY;
  runtime.sharedLibrary = FSDP_RUNTIME_SHARED_LIBRARY;
  runtime.linkFlags = FSDP_RUNTIME_LINK_FLAGS;
  runtime.cudaAvailable = FSDP_CUDA_AVAILABLE;
  runtime.cudaMissing = FSDP_CUDA_MISSING;
  runtime.cudaMainLibrary = FSDP_RUNTIME_CUDA_MAIN_LIBRARY;
  runtime.cudaLibrary = FSDP_RUNTIME_CUDA_LIBRARY;
  runtime.cudaSharedLibrary = FSDP_RUNTIME_CUDA_SHARED_LIBRARY;
  runtime.cudaLinkFlags = FSDP_RUNTIME_CUDA_LINK_FLAGS;
  runtime.cudaToolkit = FSDP_CUDA_TOOLKIT;
  return runtime;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  mlir::fsdp::registerCompilerCLOptions();
  llvm::cl::ParseCommandLineOptions(
      argc, argv,
      "fsdpc: compiles an FSDP-MLIR model file into a native trainer\n\n"
      "  fsdpc model.mlir --target=cpu -o trainer\n"
      "  fsdpc model.mlir --target=cuda --gpu-arch=sm_80,sm_90 -o trainer\n"
      "  mpirun -np 2 ./trainer --steps 100\n");
  return mlir::succeeded(
             mlir::fsdp::compile(mlir::fsdp::compilerOptionsFromCL(), runtimeOfThisBuild()))
             ? 0
             : 1;
}
