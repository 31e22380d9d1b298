//===- FSDPDialect.h - the fsdp dialect -------------------------*- C++ -*-===//

#ifndef FSDP_IR_FSDPDIALECT_H
#define FSDP_IR_FSDPDIALECT_H

#include "mlir/IR/Dialect.h"

#include "fsdp/IR/FSDPDialect.h.inc"

#endif // FSDP_IR_FSDPDIALECT_H
