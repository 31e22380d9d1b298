//===- RuntimeABI.h - symbols shared with the runtime -----------*- C++ -*-===//
//
// The names of runtime/include/fsdprt/fsdprt.h that the compiler emits or
// calls. docs/Runtime.md is the contract.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_CONVERSION_RUNTIMEABI_H
#define FSDP_CONVERSION_RUNTIMEABI_H

#include "llvm/ADT/StringRef.h"

namespace mlir::fsdp {

/// `float fsdp_train_step(void *arena, int64_t step, float lr)`.
constexpr llvm::StringLiteral kStepFunction = "fsdp_train_step";
/// `const char fsdp_manifest[]`: the JSON manifest, NUL-terminated.
constexpr llvm::StringLiteral kManifestGlobal = "fsdp_manifest";

constexpr llvm::StringLiteral kAllGatherStart = "fsdprt_all_gather_start";
constexpr llvm::StringLiteral kReduceScatterStart = "fsdprt_reduce_scatter_start";
constexpr llvm::StringLiteral kAllReduceStart = "fsdprt_all_reduce_start";
constexpr llvm::StringLiteral kWait = "fsdprt_wait";

} // namespace mlir::fsdp

#endif // FSDP_CONVERSION_RUNTIMEABI_H
