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
#include <unordered_map>

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

/// The cudnn-frontend graph fsdprt_attention_bf16 (Forward) or
/// fsdprt_attention_grad_bf16 (Backward) describes for `shape`, as the
/// frontend's JSON (its tensors' names, uids, dims, strides and types; the
/// SDPA node's attributes), before cuDNN sees it: built on the host alone,
/// so the tests check it without a GPU.
std::string attentionGraphJson(AttentionPass pass, const AttentionShape &shape,
                               bool deterministic);

/// The device pointers each entry point gives the graph, by tensor uid.
using AttentionPointers = std::unordered_map<int64_t, void *>;
AttentionPointers forwardPointers(const void *query, const void *key, const void *value,
                                  void *out, float *lse);
AttentionPointers backwardPointers(const void *query, const void *key, const void *value,
                                   const void *out, const float *lse, const void *outGrad,
                                   void *queryGrad, void *keyGrad, void *valueGrad);

} // namespace fsdprt

#endif // FSDPRT_CUDA_CUDNNATTENTION_H
