//===- RuntimeCalls.h - calling the runtime from the step -------*- C++ -*-===//
//
// The generated step calls the runtime's C functions (fsdprt.h) with buffer
// addresses as plain pointers: one declaration per function, whatever the
// buffer types.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_UTILS_RUNTIMECALLS_H
#define FSDP_UTILS_RUNTIMECALLS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::fsdp {

/// The private declaration of runtime function `name` in `module`, created on
/// first use.
func::FuncOp declareRuntimeFunction(ModuleOp module, StringRef name, FunctionType type);

/// The address of the first element of `buffer` (a memref) as an `!llvm.ptr`.
Value bufferAddress(OpBuilder &b, Location loc, Value buffer);

/// The buffer whose address `pointer` is, when bufferAddress made it; null
/// for any other pointer.
Value bufferOfAddress(Value pointer);

/// An i32 constant, as the runtime's enums are passed, and an i64 one, as
/// its sizes are.
Value i32Constant(OpBuilder &b, Location loc, int32_t value);
Value i64Constant(OpBuilder &b, Location loc, int64_t value);

/// `const char name[]` at the start of `module`: `text`, NUL-terminated, a
/// string the runtime reads from the generated object (the manifest, the
/// kernels' origins).
LLVM::GlobalOp defineCString(ModuleOp module, StringRef name, StringRef text);

} // namespace mlir::fsdp

#endif // FSDP_UTILS_RUNTIMECALLS_H
