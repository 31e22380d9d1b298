//===- Diagnostics.h - fsdpc's errors that no IR location has ---*- C++ -*-===//

#ifndef FSDP_DRIVER_DIAGNOSTICS_H
#define FSDP_DRIVER_DIAGNOSTICS_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::fsdp {

/// Prints `fsdpc: error: <message>` (a flag's or a file's error: the IR's own
/// are located) and returns failure.
inline mlir::LogicalResult fail(const llvm::Twine &message) {
  llvm::errs() << "fsdpc: error: " << message << "\n";
  return mlir::failure();
}

} // namespace mlir::fsdp

#endif // FSDP_DRIVER_DIAGNOSTICS_H
