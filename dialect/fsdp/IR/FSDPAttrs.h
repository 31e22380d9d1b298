//===- FSDPAttrs.h - fsdp attributes and enums ------------------*- C++ -*-===//

#ifndef FSDP_IR_FSDPATTRS_H
#define FSDP_IR_FSDPATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectImplementation.h"

#include "fsdp/IR/FSDPEnums.h.inc"
#include "fsdp/IR/FSDPAttrInterfaces.h.inc"

namespace mlir::fsdp {
/// Parses a real number parameter of an fsdp attribute (`0.02`, `-1`, `3e-4`).
FailureOr<llvm::APFloat> parseF64Parameter(AsmParser &parser);
/// Prints the shortest decimal form that parses back to the same double.
void printF64Parameter(AsmPrinter &printer, const llvm::APFloat &value);
/// Parses a device grid: `[N]` or `[R, S]`.
FailureOr<SmallVector<int64_t>> parseGridParameter(AsmParser &parser);
void printGridParameter(AsmPrinter &printer, ArrayRef<int64_t> grid);
} // namespace mlir::fsdp

#define GET_ATTRDEF_CLASSES
#include "fsdp/IR/FSDPAttrs.h.inc"

#endif // FSDP_IR_FSDPATTRS_H
