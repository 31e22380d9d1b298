//===- SinkHostReads.cpp - fsdp-sink-host-reads: no device loads on the host =//
//
// On a GPU the arena is device memory: the step's host code may pass its
// addresses around but never dereference them. After bufferization the only
// host reads left are scalars: a factor computed on the device and used by
// later kernels (gradient clipping), and the loss the step returns.
//
//===----------------------------------------------------------------------===//

#include "fsdp/Conversion/BufferKinds.h"
#include "fsdp/Conversion/RuntimeABI.h"
#include "fsdp/Transforms/Passes.h"
#include "fsdp/Utils/RuntimeCalls.h"

#include "mlir/IR/Builders.h"

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPSINKHOSTREADSPASS
#include "fsdp/Transforms/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;
using namespace mlir::fsdp;

namespace {

/// Replaces each (remaining) use of `load`, nested in another op, by a copy of
/// the load right before the user: the value is then read where the kernel
/// runs.
void sinkIntoUsers(memref::LoadOp load) {
  for (OpOperand &use : llvm::make_early_inc_range(load->getUses())) {
    OpBuilder b(use.getOwner());
    use.set(b.clone(*load)->getResult(0));
  }
  load->erase();
}

/// `return %load` becomes `return fsdprt_read_f32(address)`.
LogicalResult readThroughRuntime(memref::LoadOp load, func::ReturnOp ret, ModuleOp module) {
  if (!load.getType().isF32() || !load.getIndices().empty())
    return load.emitOpError("returns a device value the runtime cannot read: only the "
                            "f32 loss in a rank-0 buffer is supported");
  OpBuilder b(ret);
  Location loc = load.getLoc();
  MLIRContext *ctx = b.getContext();
  auto type = FunctionType::get(ctx, {LLVM::LLVMPointerType::get(ctx)}, {b.getF32Type()});
  func::FuncOp read = declareRuntimeFunction(module, kReadF32, type);
  Value value =
      func::CallOp::create(b, loc, read, bufferAddress(b, loc, load.getMemRef())).getResult(0);
  ret->replaceUsesOfWith(load, value);
  return success();
}

struct FSDPSinkHostReadsPass
    : public fsdp::impl::FSDPSinkHostReadsPassBase<FSDPSinkHostReadsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto step = module.lookupSymbol<func::FuncOp>(kStepFunction);
    if (!step || step.isExternal())
      return;
    Block &body = step.getBody().front();
    for (auto load : llvm::make_early_inc_range(body.getOps<memref::LoadOp>())) {
      // A read of the host arena (offload) is the host's own.
      if (load->hasAttr(kOnHostAttr))
        continue;
      func::ReturnOp ret;
      for (Operation *user : load->getUsers()) {
        if (auto r = dyn_cast<func::ReturnOp>(user)) {
          ret = r;
        } else if (user->getBlock() == &body) {
          InFlightDiagnostic diag =
              load.emitOpError("is read by host code, which cannot read device memory");
          diag.attachNote(user->getLoc()) << "read here";
          return signalPassFailure();
        }
      }
      if (ret && failed(readThroughRuntime(load, ret, module)))
        return signalPassFailure();
      sinkIntoUsers(load);
    }
  }
};

} // namespace
