//===- FSDPDialect.cpp - the fsdp dialect ---------------------------------===//

#include "fsdp/IR/FSDPDialect.h"

#include "fsdp/IR/BufferKinds.h"
#include "fsdp/IR/FSDPAttrs.h"
#include "fsdp/IR/FSDPOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace mlir::fsdp;

#include "fsdp/IR/FSDPDialect.cpp.inc"

void FSDPDialect::initialize() {
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "fsdp/IR/FSDPOps.cpp.inc"
      >();
}

LogicalResult FSDPDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attribute) {
  StringRef name = attribute.getName().getValue();
  // The lowering's tag on the step's buffers (fsdp/ABI/BufferKinds.h),
  // internal to the compiler: models never carry it.
  if (name == kBufferKindAttr || name == kGradientOfAttr) {
    // fsdp-assign-buffers moves the kind to the arena view replacing the buffer.
    StringRef opName = op->getName().getStringRef();
    bool onBuffer = opName == "memref.alloc" || (name == kBufferKindAttr && opName == "memref.view");
    if (!onBuffer || !isa<StringAttr>(attribute.getValue()))
      return op->emitError() << "'" << name << "' is a string on a memref.alloc"
                             << (name == kBufferKindAttr ? " or memref.view" : "");
    return success();
  }
  if (name == kCollectiveUnitAttr) {
    // It follows the call down to the LLVM dialect.
    StringRef opName = op->getName().getStringRef();
    if ((opName != "func.call" && opName != "llvm.call") || !isa<StringAttr>(attribute.getValue()))
      return op->emitError() << "'" << name << "' is a string on a call";
    return success();
  }
  if (name == kOnHostAttr) {
    // Offload's read of the clipping coefficient from the host arena.
    if (op->getName().getStringRef() != "memref.load" || !isa<UnitAttr>(attribute.getValue()))
      return op->emitError() << "'" << name << "' is a unit attribute on a memref.load";
    return success();
  }
  if (name == kRowPrologueAttr) {
    // fsdp-cuda-mark-row-prologues' mark for the buffer plan.
    if (op->getName().getDialectNamespace() != "linalg" || !isa<UnitAttr>(attribute.getValue()))
      return op->emitError() << "'" << name << "' is a unit attribute on a linalg op";
    return success();
  }
  if (name == kRecomputedAttr) {
    // A product computed again (an attention backward's scores), from linalg
    // to the runtime call, for the step's FLOP count.
    StringRef opName = op->getName().getStringRef();
    if ((opName != "linalg.batch_matmul" && opName != "func.call" && opName != "llvm.call") ||
        !isa<UnitAttr>(attribute.getValue()))
      return op->emitError() << "'" << name
                             << "' is a unit attribute on a linalg.batch_matmul or a call";
    return success();
  }
  if (name == getRecomputeAttrName()) {
    if (!isa<ModuleOp>(op) || !isa<RecomputeAttr>(attribute.getValue()))
      return op->emitError() << "'" << name << "' is a #fsdp.recompute on the module";
    return success();
  }
  if (name == getManifestAttrName()) {
    if (!isa<ModuleOp>(op) || !isa<ManifestAttr>(attribute.getValue()))
      return op->emitError() << "'" << name << "' is a #fsdp.manifest on the module";
    return success();
  }
  if (name == getForwardOnlyAttrName()) {
    if (!isa<FunctionOpInterface>(op) || !isa<UnitAttr>(attribute.getValue()))
      return op->emitError() << "'" << name << "' is a unit attribute on a function";
    return success();
  }
  if (name == getMicroBatchesAttrName()) {
    auto count = dyn_cast<IntegerAttr>(attribute.getValue());
    if (!isa<FunctionOpInterface>(op) || !count || count.getInt() < 1)
      return op->emitError() << "'" << name << "' is a positive integer on a function";
    return success();
  }
  if (name != getPlanAttrName())
    return op->emitError() << "unknown fsdp attribute '" << name
                           << "'; the only one is '" << getPlanAttrName() << "'";
  if (!isa<ModuleOp>(op))
    return op->emitError() << "'" << name << "' belongs on the builtin.module of the model";
  for (Operation *outer = op->getParentOp(); outer; outer = outer->getParentOp())
    if (outer->hasAttr(name))
      return op->emitError() << "a model has one plan, but an enclosing module "
                                "already carries '"
                             << name << "'";
  if (!isa<PlanAttr>(attribute.getValue()))
    return op->emitError() << "'" << name << "' must be a #fsdp.plan<...>, got "
                           << attribute.getValue();
  return success();
}

/// The dialect defines no argument or result attributes yet: reject any, so a
/// misspelt or misplaced `fsdp.*` attribute is never silently ignored.
static LogicalResult rejectValueAttribute(Operation *op, NamedAttribute attribute,
                                          StringRef where) {
  return op->emitError() << "unknown fsdp " << where << " attribute '"
                         << attribute.getName().getValue() << "'";
}

LogicalResult FSDPDialect::verifyRegionArgAttribute(Operation *op, unsigned, unsigned,
                                                    NamedAttribute attribute) {
  return rejectValueAttribute(op, attribute, "argument");
}

LogicalResult FSDPDialect::verifyRegionResultAttribute(Operation *op, unsigned,
                                                       unsigned,
                                                       NamedAttribute attribute) {
  return rejectValueAttribute(op, attribute, "result");
}
