//===- AttentionArguments.h - Checks of an attention's arguments -*- C++ -*-===//
//
// fsdprt_attention_bf16 and its gradient (fsdprt.h) go to cuDNN's fused
// attention on the CUDA backend and to plain loops on the CPU backend. Their
// shape is checked here first, the same way for both, so that a code
// generation bug is a clear error naming the argument rather than cuDNN's
// refusal of a graph, or a read past a buffer.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_ABI_ATTENTIONARGUMENTS_H
#define FSDPRT_ABI_ATTENTIONARGUMENTS_H

#include "fsdprt/fsdprt.h"

#include <cstdint>
#include <string>

namespace fsdprt {

/// One attention: queries [batch, heads, seq, headDim], keys and values
/// [batch, kvHeads, seq, headDim], all row-major and contiguous, or with
/// `layout` FSDPRT_ATTENTION_BSHD [batch, seq, heads, headDim]. A `window`
/// W > 0 (with `causal`) keeps query t to keys t - W < s <= t.
struct AttentionShape {
  int64_t batch = 0, heads = 0, kvHeads = 0, seq = 0, headDim = 0;
  bool causal = false;
  int64_t window = 0;
  float scale = 0;
  int32_t layout = FSDPRT_ATTENTION_BHSD;

  bool sequenceMajor() const { return layout == FSDPRT_ATTENTION_BSHD; }

  int64_t queryElements() const { return batch * heads * seq * headDim; }
  int64_t keyElements() const { return batch * kvHeads * seq * headDim; }
  /// The log-sum-exp's: one per query row.
  int64_t rows() const { return batch * heads * seq; }
  /// Query heads per key and value head.
  int64_t group() const { return heads / kvHeads; }
  /// The first key query `t` attends to.
  int64_t firstKey(int64_t t) const { return window > 0 && t >= window ? t - window + 1 : 0; }
  /// One past the last key query `t` attends to.
  int64_t endKey(int64_t t) const { return causal ? t + 1 : seq; }
};

/// The shape of fsdprt_attention_bf16's arguments.
AttentionShape attentionShape(int64_t batch, int64_t heads, int64_t kvHeads, int64_t seq,
                              int64_t headDim, int32_t causal, int64_t window, float scale,
                              int32_t layout = 0);

/// Checks that every size is positive, that kvHeads divides heads, that a
/// window is not negative and comes with causal, that the scale is finite,
/// that the layout is one of FSDPRT_ATTENTION_* and that no operand has more
/// than 2^62 bytes. Errors name `what` and the argument.
void checkAttention(const char *what, const AttentionShape &shape);

/// "batch = 2, heads = 8, kv_heads = 2, seq = 16, head_dim = 64, causal,
/// window = 4, scale = 0.125", for errors.
std::string describeAttention(const AttentionShape &shape);

} // namespace fsdprt

#endif // FSDPRT_ABI_ATTENTIONARGUMENTS_H
