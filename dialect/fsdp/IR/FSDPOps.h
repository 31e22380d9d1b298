//===- FSDPOps.h - fsdp operations ------------------------------*- C++ -*-===//

#ifndef FSDP_IR_FSDPOPS_H
#define FSDP_IR_FSDPOPS_H

#include "fsdp/IR/FSDPAttrs.h"
#include "fsdp/IR/FSDPDialect.h"
#include "fsdp/IR/FSDPOpInterfaces.h.inc"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <cmath>

namespace mlir::fsdp {
/// A tensor the model ops accept: ranked, static, every dimension at least 1,
/// an element count that fits in int64 and no encoding.
bool isModelTensorType(Type type);
} // namespace mlir::fsdp

#define GET_OP_CLASSES
#include "fsdp/IR/FSDPOps.h.inc"

#endif // FSDP_IR_FSDPOPS_H
