//===- ManifestGlobal.h - Edits of the step's embedded manifest -*- C++ -*-===//
//
// convert-fsdp-to-runtime writes the manifest the trainer reads into the
// `fsdp_manifest` global; passes after it (the buffer plan, the step's FLOP
// count) and fsdpc (the device profile) add what only they know. One way to
// edit it keeps the global's string NUL-terminated and its type its length.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_UTILS_MANIFESTGLOBAL_H
#define FSDP_UTILS_MANIFESTGLOBAL_H

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/JSON.h"

namespace mlir::fsdp {

/// Parses `global`'s manifest, lets `edit` change it and writes it back; an
/// error on the global when it holds no JSON object.
LogicalResult editManifest(LLVM::GlobalOp global,
                           llvm::function_ref<void(llvm::json::Object &)> edit);

} // namespace mlir::fsdp

#endif // FSDP_UTILS_MANIFESTGLOBAL_H
