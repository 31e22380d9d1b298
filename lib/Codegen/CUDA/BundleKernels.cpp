//===- BundleKernels.cpp - fsdp-cuda-bundle-kernels: one device module ---------===//
//
// Outlining gives each kernel a GPU module of its own, so each would be
// compiled by ptxas, packed and loaded separately, and launched on a stream
// created per launch. A training step has hundreds of kernels: one module
// compiles once per architecture, and the runtime's compute stream orders
// them with its GEMMs and the events of fsdp-cuda-insert-stream-events. Identical
// kernels (the same op on the same shapes in every block of a deep model) are
// one kernel, launched once per block.
//
//===----------------------------------------------------------------------===//

#include "Utils/Outlining.h"
#include "Utils/RuntimeABI.h"
#include "Utils/RuntimeCalls.h"
#include "Utils/StepFunction.h"
#include "fsdp/Codegen/CUDA/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPBUNDLEKERNELSPASS
#include "fsdp/Codegen/CUDA/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;
using namespace mlir::fsdp;

namespace {

constexpr StringLiteral kKernelModule = "fsdp_kernels";

struct FSDPBundleKernelsPass
    : public fsdp::impl::FSDPBundleKernelsPassBase<FSDPBundleKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto step = requireStep(module, StepLevel::Runtime, getArgument());
    if (!step)
      return signalPassFailure();
    SmallVector<gpu::LaunchFuncOp> launches;
    step.walk([&](gpu::LaunchFuncOp launch) { launches.push_back(launch); });
    if (launches.empty())
      return;
    MLIRContext *ctx = &getContext();

    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    auto bundle = gpu::GPUModuleOp::create(b, module.getLoc(), kKernelModule);
    SymbolTable kernels(bundle);

    // The compute stream as the async token every launch depends on: the
    // upstream lowering launches an async kernel on its dependency's stream
    // (and synchronises after, and creates a stream for, a synchronous one).
    b.setInsertionPointToStart(&step.getBody().front());
    Location loc = step.getLoc();
    auto streamType = FunctionType::get(ctx, {b.getI32Type()}, {LLVM::LLVMPointerType::get(ctx)});
    Value stream =
        func::CallOp::create(b, loc, declareRuntimeFunction(module, kStream, streamType),
                             i32Constant(b, loc, static_cast<int32_t>(RuntimeStream::Compute)))
            .getResult(0);
    auto tokenType = gpu::AsyncTokenType::get(ctx);
    Value computeStream =
        UnrealizedConversionCastOp::create(b, loc, tokenType, stream).getResult(0);

    llvm::SetVector<gpu::GPUModuleOp> outlined;
    IdenticalFunctions distinct;
    for (gpu::LaunchFuncOp launch : launches) {
      auto kernel = SymbolTable::lookupNearestSymbolFrom<gpu::GPUFuncOp>(launch,
                                                                          launch.getKernel());
      if (!kernel || !launch.getAsyncDependencies().empty() || launch.getAsyncToken() ||
          launch.getAsyncObject() || launch.hasClusterSize()) {
        launch.emitOpError("expected a synchronous launch of an outlined kernel");
        return signalPassFailure();
      }
      outlined.insert(kernel->getParentOfType<gpu::GPUModuleOp>());
      // The kernels of identical blocks are identical: one of each is
      // compiled, and launched for every block.
      auto moved = cast<gpu::GPUFuncOp>(kernel->clone());
      if (FunctionOpInterface known = distinct.find(moved)) {
        moved.erase();
        moved = cast<gpu::GPUFuncOp>(known.getOperation());
      } else {
        moved.setName(("fsdp_kernel_" + llvm::Twine(distinct.size())).str());
        kernels.insert(moved);
        distinct.add(moved);
      }
      b.setInsertionPoint(launch);
      gpu::LaunchFuncOp::create(
          b, launch.getLoc(),
          SymbolRefAttr::get(ctx, kKernelModule, {FlatSymbolRefAttr::get(ctx, moved.getName())}),
          launch.getGridSizeOperandValues(), launch.getBlockSizeOperandValues(),
          launch.getDynamicSharedMemorySize(), launch.getKernelOperands(), tokenType,
          ValueRange{computeStream});
      launch.erase();
    }
    for (gpu::GPUModuleOp old : outlined)
      old.erase();
  }
};

} // namespace
