//===- Diagnostics.h - fsdpc's errors that no IR location has ---*- C++ -*-===//

#ifndef FSDP_DRIVER_DIAGNOSTICS_H
#define FSDP_DRIVER_DIAGNOSTICS_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/Twine.h"

namespace fsdpc {

/// Prints `fsdpc: error: <message>` (a flag's or a file's error: the IR's own
/// are located) and returns failure.
mlir::LogicalResult fail(const llvm::Twine &message);

} // namespace fsdpc

#endif // FSDP_DRIVER_DIAGNOSTICS_H
