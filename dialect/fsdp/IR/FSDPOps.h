//===- FSDPOps.h - fsdp operations ------------------------------*- C++ -*-===//

#ifndef FSDP_IR_FSDPOPS_H
#define FSDP_IR_FSDPOPS_H

#include "fsdp/IR/FSDPAttrs.h"
#include "fsdp/IR/FSDPDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "fsdp/IR/FSDPOps.h.inc"

#endif // FSDP_IR_FSDPOPS_H
