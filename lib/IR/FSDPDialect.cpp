//===- FSDPDialect.cpp - the fsdp dialect ---------------------------------===//

#include "fsdp/IR/FSDPDialect.h"
#include "fsdp/IR/FSDPAttrs.h"
#include "fsdp/IR/FSDPOps.h"

#include "mlir/IR/BuiltinOps.h"

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
  if (attribute.getName() != getPlanAttrName())
    return op->emitError() << "unknown fsdp attribute '" << attribute.getName() << "'";
  if (!isa<ModuleOp>(op))
    return op->emitError() << "'" << getPlanAttrName()
                           << "' belongs on the builtin.module of the model";
  if (!isa<PlanAttr>(attribute.getValue()))
    return op->emitError() << "'" << getPlanAttrName()
                           << "' must be a #fsdp.plan<...>, got " << attribute.getValue();
  return success();
}
