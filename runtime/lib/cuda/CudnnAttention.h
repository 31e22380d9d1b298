//===- CudnnAttention.h - Fused attention on cuDNN -------------*- C++ -*-===//
//
// fsdprt_attention_bf16 and fsdprt_attention_grad_bf16 (fsdprt.h) on the
// CUDA backend: what else may ask about their plans.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_CUDA_CUDNNATTENTION_H
#define FSDPRT_CUDA_CUDNNATTENTION_H

#include "abi/AttentionArguments.h"

#include <cstdint>
#include <string>

namespace fsdprt {

enum class AttentionPass { Forward, Backward };

/// What cuDNN chose for one attention: its plan's workspace and engine.
struct AttentionPlanInfo {
  int64_t workspaceBytes = 0;
  std::string engine;
};

/// Builds (once, as the first call would) the plan of `pass` over `shape`
/// with at most `workspaceLimit` bytes of workspace, and says what it needs;
/// `deterministic` as fsdprt_attention_grad_bf16's (ignored forward).
AttentionPlanInfo attentionPlan(AttentionPass pass, const AttentionShape &shape,
                                bool deterministic, int64_t workspaceLimit);

} // namespace fsdprt

#endif // FSDPRT_CUDA_CUDNNATTENTION_H
