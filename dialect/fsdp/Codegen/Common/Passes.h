//===- Passes.h - code generation of both targets ---------------*- C++ -*-===//

#ifndef FSDP_CODEGEN_COMMON_PASSES_H
#define FSDP_CODEGEN_COMMON_PASSES_H

#include "fsdp/IR/FSDPOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"

namespace mlir::fsdp {

#define GEN_PASS_DECL
#include "fsdp/Codegen/Common/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "fsdp/Codegen/Common/Passes.h.inc"

} // namespace mlir::fsdp

#endif // FSDP_CODEGEN_COMMON_PASSES_H
