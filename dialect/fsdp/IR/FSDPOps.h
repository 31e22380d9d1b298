//===- FSDPOps.h - fsdp operations ------------------------------*- C++ -*-===//

#ifndef FSDP_IR_FSDPOPS_H
#define FSDP_IR_FSDPOPS_H

#include "fsdp/IR/FSDPAttrs.h"
#include "fsdp/IR/FSDPDialect.h"
#include "fsdp/IR/FSDPOpInterfaces.h.inc"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <algorithm>
#include <optional>

namespace mlir::fsdp {
/// A tensor the model ops accept: ranked, static, every dimension at least 1,
/// an element count that fits in int64 and no encoding.
bool isModelTensorType(Type type);

/// fsdp.attention's and fsdp.attention_grad's scale: `scale` when given, else
/// 1 / sqrt(D) for a query [B, H, T, D].
double attentionScale(std::optional<llvm::APFloat> scale, RankedTensorType query);

/// Keys per block of the attention lowering when the op does not say.
constexpr int64_t kDefaultAttentionKeyBlock = 512;

/// The keys a block of `queries` consecutive queries of a sliding window of
/// `window` positions can reach: window + queries - 1, at most all `keys`.
inline int64_t attentionWindowKeys(int64_t keys, int64_t window, int64_t queries) {
  return std::min(keys, window + queries - 1);
}

/// The (query, key) pairs whose scores fsdp.attention's lowering computes
/// per batch and query head: all T x S, or with a sliding window, for each
/// block of `keyBlock` queries (fewer in the last), only the keys its window
/// can reach: the band's work.
int64_t attentionScoredPairs(int64_t queries, int64_t keys, std::optional<int64_t> window,
                             int64_t keyBlock);

/// The pairs a fused attention call (fsdp-fuse-attention) is counted for per
/// batch and query head: all T x S; causal, half the square T^2 / 2; with a
/// sliding window W < T, the band's, the sum over t of min(t + 1, W).
double attentionFusedPairs(int64_t queries, int64_t keys, bool causal,
                           std::optional<int64_t> window);
} // namespace mlir::fsdp

#define GET_OP_CLASSES
#include "fsdp/IR/FSDPOps.h.inc"

#endif // FSDP_IR_FSDPOPS_H
