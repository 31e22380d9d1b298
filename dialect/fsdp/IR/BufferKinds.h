//===- BufferKinds.h - what a transient buffer of the step holds -*- C++ -*-===//
//
// convert-fsdp-to-runtime tags the buffers it creates for collectives, so
// that fsdp-assign-buffers can account for them by kind; every other buffer
// of the step comes from bufferization: activations and temporaries.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_IR_BUFFERKINDS_H
#define FSDP_IR_BUFFERKINDS_H

#include "llvm/ADT/StringRef.h"

namespace mlir::fsdp {

/// The attribute on a `memref.alloc` naming its kind.
constexpr llvm::StringLiteral kBufferKindAttr = "fsdp.buffer";
/// A unit's parameters, all-gathered.
constexpr llvm::StringLiteral kGatheredKind = "gathered";
/// A unit's flat gradient before its reduce-scatter.
constexpr llvm::StringLiteral kGradientKind = "gradient";
/// The operand of an all-reduce that has no buffer of its own.
constexpr llvm::StringLiteral kCollectiveKind = "collective";
/// A unit's gradient shard, from its reduction to its update at the end of
/// the step; `kGradientOfAttr` names the unit, and fsdp-assign-buffers writes
/// where it lies into the manifest (the trainer reads it after the step).
constexpr llvm::StringLiteral kGradientShardKind = "gradient_shard";
constexpr llvm::StringLiteral kGradientOfAttr = "fsdp.gradient_of";

/// What fsdp-assign-buffers leaves on the arena view that replaces a
/// transient buffer: its kind (the kinds above, or `kActivationKind` for
/// every buffer bufferization made), for analyses of the planned step (the
/// memory over the step, `fsdpc --memory-svg`).
constexpr llvm::StringLiteral kActivationKind = "activation";

/// The unit a collective's start call moves, on the call (`fsdpc --timeline`
/// names its events by it).
constexpr llvm::StringLiteral kCollectiveUnitAttr = "fsdp.unit";

/// On a product that computes again what an earlier one of the same step
/// computed (the scores a tiled attention's backward recomputes), from
/// convert-fsdp-to-linalg to the runtime call fsdp-lower-gemms makes of it:
/// fsdp-record-step-flops counts it as the step's work, not the model's.
constexpr llvm::StringLiteral kRecomputedAttr = "fsdp.recomputed";

/// On a read of the host arena in the step of a GPU target (offload's
/// clipping coefficient): fsdp-cuda-form-kernels and fsdp-cuda-sink-host-reads leave it
/// to the host.
constexpr llvm::StringLiteral kOnHostAttr = "fsdp.on_host";

/// On an elementwise op on buffers that the GPU kernel of the reduction after
/// it runs too (fsdp-cuda-mark-row-prologues): its threads read the op's
/// operands while the reduction runs, so the buffer plan keeps them live
/// until the first later op that reads what the marked op writes
/// (lib/Analysis/BufferLiveness.cpp).
constexpr llvm::StringLiteral kRowPrologueAttr = "fsdp.row_prologue";

} // namespace mlir::fsdp

#endif // FSDP_IR_BUFFERKINDS_H
