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
/// Reshape, transpose and embedding lookups, with their gradients.
void populateFSDPLayoutToLinalgPatterns(RewritePatternSet &patterns);
/// fsdp.slice and fsdp.slice_grad.
void populateFSDPSliceToLinalgPatterns(RewritePatternSet &patterns);

/// All of the above.
void populateFSDPToLinalgPatterns(RewritePatternSet &patterns);

} // namespace mlir::fsdp

#endif // FSDP_CONVERSION_FSDPTOLINALG_H
