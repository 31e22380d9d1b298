//===- SinkHostReads.cpp - fsdp-cuda-sink-host-reads: no device loads on the host =//
//
// On a GPU the arena is device memory: the step's host code may pass its
// addresses around but never dereference them. After bufferization the only
// host reads left are scalars the kernels use: a factor computed on the
// device (gradient clipping), and the learning rate and step number, which
// the runtime writes into the arena before each step so that a step replayed
// as a CUDA graph reads this step's values. Each is read, and whatever the
// host computed from it (the optimizer's bias corrections) recomputed, in the
// kernels that use it.
//
//===----------------------------------------------------------------------===//

#include "Utils/StepFunction.h"
#include "fsdp/Codegen/CUDA/Passes.h"
#include "fsdp/IR/BufferKinds.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/MapVector.h"

namespace mlir::fsdp {
#define GEN_PASS_DEF_FSDPSINKHOSTREADSPASS
#include "fsdp/Codegen/CUDA/Passes.h.inc"
} // namespace mlir::fsdp

using namespace mlir;
using namespace mlir::fsdp;

namespace {

/// The ops of `body` whose results are device values, in program order:
/// loads of the arena and pure ops computing from them. Fails at a host op
/// that reads one.
FailureOr<llvm::SetVector<Operation *>> findDeviceValues(Block &body) {
  llvm::SetVector<Operation *> device;
  for (Operation &op : body) {
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      // A read of the host arena (offload) is the host's own.
      if (!load->hasAttr(kOnHostAttr))
        device.insert(load);
      continue;
    }
    Value read;
    for (Value operand : op.getOperands())
      if (Operation *def = operand.getDefiningOp(); def && device.contains(def))
        read = operand;
    if (!read)
      continue;
    if (isPure(&op) && op.getNumRegions() == 0 && !op.hasTrait<OpTrait::IsTerminator>()) {
      device.insert(&op);
      continue;
    }
    InFlightDiagnostic diag =
        op.emitOpError("is host code reading a device value, which the host cannot read");
    diag.attachNote(read.getLoc()) << "the device value";
    if (isa<func::ReturnOp>(op))
      diag.attachNote() << "a step on the device leaves its loss in the arena "
                           "(convert-fsdp-to-runtime)";
    return failure();
  }
  return device;
}

/// `value`, computed again right before `at` (clones of its device ops,
/// shared through `copies`).
Value recompute(Value value, OpBuilder &at, const llvm::SetVector<Operation *> &device,
                IRMapping &copies) {
  Operation *def = value.getDefiningOp();
  if (!def || !device.contains(def))
    return value;
  if (Value copy = copies.lookupOrNull(value))
    return copy;
  for (Value operand : def->getOperands())
    recompute(operand, at, device, copies);
  return at.clone(*def, copies)->getResult(cast<OpResult>(value).getResultNumber());
}

/// The copies of device values in one block that reads them: at the
/// block's start, where they dominate every reader in the block, in program
/// order.
struct BlockCopies {
  explicit BlockCopies(Block *block) : at(OpBuilder::atBlockBegin(block)) {}
  OpBuilder at;
  IRMapping copies;
};

struct FSDPSinkHostReadsPass
    : public fsdp::impl::FSDPSinkHostReadsPassBase<FSDPSinkHostReadsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto step = requireStep(module, StepLevel::Runtime, getArgument());
    if (!step)
      return signalPassFailure();
    Block &body = step.getBody().front();
    FailureOr<llvm::SetVector<Operation *>> device = findDeviceValues(body);
    if (failed(device))
      return signalPassFailure();
    llvm::MapVector<Block *, BlockCopies> copiesIn;
    for (Operation *op : *device)
      for (OpOperand &use : llvm::make_early_inc_range(op->getUses())) {
        Block *block = use.getOwner()->getBlock();
        if (block == &body)
          continue; // another device op, itself recomputed where read
        // Only a linalg body becomes a kernel; any other region (a host
        // loop's) runs on the host.
        if (!use.getOwner()->getParentOfType<linalg::LinalgOp>()) {
          InFlightDiagnostic diag = use.getOwner()->emitOpError(
              "is host code reading a device value, which the host cannot read");
          diag.attachNote(op->getLoc()) << "the device value";
          return signalPassFailure();
        }
        BlockCopies &copies = copiesIn.try_emplace(block, block).first->second;
        use.set(recompute(use.get(), copies.at, *device, copies.copies));
      }
    for (Operation *op : llvm::reverse(*device))
      op->erase();
  }
};

} // namespace
