//===- MarkRowPrologues.cpp - fsdp-cuda-mark-row-prologues ----------------===//
//
// fsdp-cuda-form-kernels runs an elementwise op in the kernel of the block
// reduction after it only when the buffer plan keeps what the reduction
// writes apart from what the op touches. Marked before the plan, the op's
// operands live until the reduction, and the plan does.
//
//===----------------------------------------------------------------------===//

#include "Utils/StepFunction.h"
#include "fsdp/Codegen/CUDA/Passes.h"
#include "fsdp/IR/BufferKinds.h"

#include "KernelFormation/FormKernels.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPMARKROWPROLOGUESPASS
#include "fsdp/Codegen/CUDA/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;
using namespace mlir::fsdp;

namespace {

/// The op after `op` that touches memory, past new buffers and the fills
/// that form-kernels folds into the reduction they start.
Operation *nextWork(Operation *op) {
  for (Operation *next = op->getNextNode(); next; next = next->getNextNode())
    if (!isMemoryEffectFree(next) && !isa<linalg::FillOp, memref::AllocOp>(next))
      return next;
  return nullptr;
}

struct FSDPMarkRowProloguesPass
    : public fsdp::impl::FSDPMarkRowProloguesPassBase<FSDPMarkRowProloguesPass> {
  void runOnOperation() override {
    auto step = requireStep(getOperation(), StepLevel::Runtime, getArgument());
    if (!step)
      return signalPassFailure();
    UnitAttr unit = UnitAttr::get(&getContext());
    for (auto producer : step.getBody().front().getOps<linalg::LinalgOp>()) {
      auto reduction = dyn_cast_or_null<linalg::LinalgOp>(nextWork(producer));
      if (reduction && isRowPrologue(producer, reduction, /*arena=*/nullptr))
        producer->setAttr(kRowPrologueAttr, unit);
    }
  }
};

} // namespace
