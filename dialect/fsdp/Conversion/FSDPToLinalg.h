//===- FSDPToLinalg.h - fsdp compute ops to linalg --------------*- C++ -*-===//

#ifndef FSDP_CONVERSION_FSDPTOLINALG_H
#define FSDP_CONVERSION_FSDPTOLINALG_H

#include "mlir/IR/PatternMatch.h"

namespace mlir::fsdp {

/// Matrix products to linalg.matmul / linalg.batch_matmul.
/// fsdp.attention and its gradient as blocks of keys (FlashAttention-2).
void populateFSDPAttentionToLinalgPatterns(RewritePatternSet &patterns);
void populateFSDPMatmulToLinalgPatterns(RewritePatternSet &patterns);
/// Elementwise, broadcast, activation-gradient, mask and clipping ops.
void populateFSDPElementwiseToLinalgPatterns(RewritePatternSet &patterns);
/// Reductions, softmax, normalisations and losses, with their gradients.
void populateFSDPReductionToLinalgPatterns(RewritePatternSet &patterns);
/// fsdp.rope, reading its angles' cosines and sines from tables computed once
/// at the function's start for each kind of rotation (same positions, rotary
/// dimension, base and scaling), which the patterns find by the attribute
/// kRotaryTableAttr; the conversion removes it when done.
void populateFSDPRotaryToLinalgPatterns(RewritePatternSet &patterns);
inline constexpr llvm::StringLiteral kRotaryTableAttr = "fsdp.rotary_table";
/// Reshape, transpose and embedding lookups, and the gradients of the first
/// two.
void populateFSDPLayoutToLinalgPatterns(RewritePatternSet &patterns);
/// The embedding gradient's scatter-add: one loop over the positions in
/// order, or, with `sortPositions`, the positions sorted by table row and
/// summed in pieces, every step of it parallel and in a fixed order (the
/// GPU's lowering).
void populateFSDPEmbeddingGradToLinalgPatterns(RewritePatternSet &patterns, bool sortPositions);
/// fsdp.slice and fsdp.slice_grad.
void populateFSDPSliceToLinalgPatterns(RewritePatternSet &patterns);

/// All of the above.
void populateFSDPToLinalgPatterns(RewritePatternSet &patterns, bool sortScatterPositions);

} // namespace mlir::fsdp

#endif // FSDP_CONVERSION_FSDPTOLINALG_H
