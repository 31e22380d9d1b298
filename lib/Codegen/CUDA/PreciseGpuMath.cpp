//===- PreciseGpuMath.cpp - fsdp-cuda-precise-math: IEEE square roots in kernels --===//
//
// convert-gpu-to-nvvm turns math.sqrt and math.rsqrt into libdevice calls,
// which the NVVM target compiles to the hardware's approximate instructions
// (sqrt.approx, rsqrt.approx: about 2 ulp off). The optimizer's update and
// the norms divide by square roots, and the CPU target's are IEEE-rounded:
// unless the plan allows approximate math (then fsdp-cuda-pipeline leaves
// this pass out), the kernels call libdevice's
// correctly rounded square root instead (__nv_fsqrt_rn: sqrt.rn), and a
// reciprocal square root is 1 / that (div.rn), as the CPU computes it.
//
//===----------------------------------------------------------------------===//

#include "fsdp/Codegen/CUDA/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPPRECISEGPUMATHPASS
#include "fsdp/Codegen/CUDA/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;
using namespace mlir::fsdp;

namespace {

/// libdevice's correctly rounded square root of `type` (sqrt.rn), declared
/// in `kernels` once.
LLVM::LLVMFuncOp roundedSqrt(OpBuilder &b, gpu::GPUModuleOp kernels, FloatType type) {
  StringRef name = type.isF64() ? "__nv_dsqrt_rn" : "__nv_fsqrt_rn";
  if (auto known = kernels.lookupSymbol<LLVM::LLVMFuncOp>(name))
    return known;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(kernels.getBody());
  return LLVM::LLVMFuncOp::create(b, kernels.getLoc(), name,
                                  LLVM::LLVMFunctionType::get(type, {type}));
}

/// `sqrt(x)`, correctly rounded.
Value sqrtRn(OpBuilder &b, Location loc, gpu::GPUModuleOp kernels, Value x) {
  LLVM::LLVMFuncOp callee = roundedSqrt(b, kernels, cast<FloatType>(x.getType()));
  return LLVM::CallOp::create(b, loc, callee, ValueRange{x}).getResult();
}

/// Whether `type` has a correctly rounded libdevice square root.
bool hasRoundedSqrt(Type type) { return type.isF32() || type.isF64(); }

struct FSDPPreciseGpuMathPass
    : public fsdp::impl::FSDPPreciseGpuMathPassBase<FSDPPreciseGpuMathPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    OpBuilder b(&getContext());
    for (auto kernels : module.getOps<gpu::GPUModuleOp>()) {
      kernels.walk([&](math::SqrtOp op) {
        if (!hasRoundedSqrt(op.getType()))
          return;
        b.setInsertionPoint(op);
        op.replaceAllUsesWith(sqrtRn(b, op.getLoc(), kernels, op.getOperand()));
        op.erase();
      });
      kernels.walk([&](math::RsqrtOp op) {
        if (!hasRoundedSqrt(op.getType()))
          return;
        b.setInsertionPoint(op);
        Location loc = op.getLoc();
        Value one = arith::ConstantOp::create(b, loc, b.getFloatAttr(op.getType(), 1.0));
        Value root = sqrtRn(b, loc, kernels, op.getOperand());
        op.replaceAllUsesWith(arith::DivFOp::create(b, loc, one, root).getResult());
        op.erase();
      });
    }
  }
};

} // namespace
