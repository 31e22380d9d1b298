//===- HoistTensorCollectives.cpp - fsdp-hoist-tensor-collectives ---------===//
//
// A tensor group's collective starts where it stands in the step and is
// waited for before its first reader (convert-fsdp-to-runtime). Autodiff
// leaves it after whatever came before it in the backward pass: the weight
// gradients of the products whose input gradients it sums, say, which need
// nothing from it, yet run before it starts while its reader then waits for
// the whole transfer. This pass moves such independent ops after it, so that
// it starts as soon as its operand is computed and they run during the
// transfer.
//
//===----------------------------------------------------------------------===//

#include "fsdp/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPHOISTTENSORCOLLECTIVESPASS
#include "fsdp/Transforms/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;
using namespace mlir::fsdp;

namespace {

bool isTensorCollective(Operation *op) {
  return isa<TensorSumOp, TensorReduceScatterOp, TensorAllGatherOp, TensorUnchunkOp>(op);
}

/// An op that may run later without changing the step: pure, and neither a
/// collective (every rank keeps the collectives' order) nor a region holder.
bool isMovable(Operation *op) {
  return isPure(op) && op->getNumRegions() == 0 && !isTensorCollective(op);
}

/// Moves the movable ops right before `collective` that its operands do not
/// depend on to right after it, in their order, and adds them to `moved`: an
/// op moved once stays with the transfer it overlaps (the next collective's
/// run stops at it), so that the weight gradients, which the units'
/// reduce-scatters wait for, are not dragged to the end of the backward pass.
void hoist(Operation *collective, llvm::SmallPtrSetImpl<Operation *> &moved) {
  SmallVector<Operation *> run;
  for (Operation *op = collective->getPrevNode(); op && isMovable(op) && !moved.contains(op);
       op = op->getPrevNode())
    run.push_back(op);
  llvm::SmallPtrSet<Operation *, 16> needed;
  auto need = [&](Operation *user) {
    for (Value operand : user->getOperands())
      if (Operation *def = operand.getDefiningOp())
        needed.insert(def);
  };
  need(collective);
  for (Operation *op : run) // from the collective backwards
    if (needed.contains(op))
      need(op);
  Operation *after = collective;
  for (Operation *op : llvm::reverse(run))
    if (!needed.contains(op)) {
      op->moveAfter(after);
      moved.insert(op);
      after = op;
    }
}

struct FSDPHoistTensorCollectivesPass
    : public fsdp::impl::FSDPHoistTensorCollectivesPassBase<FSDPHoistTensorCollectivesPass> {
  void runOnOperation() override {
    SmallVector<Operation *> collectives;
    getOperation().walk([&](Operation *op) {
      if (isTensorCollective(op))
        collectives.push_back(op);
    });
    llvm::SmallPtrSet<Operation *, 32> moved;
    for (Operation *collective : collectives)
      hoist(collective, moved);
  }
};

} // namespace
