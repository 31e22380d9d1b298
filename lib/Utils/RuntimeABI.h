//===- RuntimeABI.h - symbols shared with the runtime -----------*- C++ -*-===//
//
// The names of runtime/include/fsdprt/fsdprt.h that the compiler emits or
// calls, and its enums and layout facts as the compiler's types: their values
// are fsdprt.h's, stated there once. docs/Runtime.md is the contract.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_UTILS_RUNTIMEABI_H
#define FSDP_UTILS_RUNTIMEABI_H

#include "fsdprt/fsdprt.h"

#include "llvm/ADT/StringRef.h"

namespace mlir::fsdp {

/// `float fsdp_train_step(void *arena, int64_t step, float lr)`; with
/// `offload = optimizer`, `float fsdp_train_step(void *arena, void *host_arena,
/// int64_t step, float lr)`.
constexpr llvm::StringLiteral kStepFunction = "fsdp_train_step";
/// `const char fsdp_manifest[]`: the JSON manifest, NUL-terminated.
constexpr llvm::StringLiteral kManifestGlobal = "fsdp_manifest";
/// The CUDA kernels' places in the model's source (fsdp-cuda-record-kernel-
/// origins): `<kernel>\t<file:line:col>, ...` lines, NUL-terminated.
constexpr llvm::StringLiteral kKernelOriginsGlobal = "fsdp_kernel_origins";
/// The held-out evaluation step fsdpc links beside the training step: the
/// same signature (its step number and rate are not read), the loss of the
/// batch at the inputs' offsets, nothing updated; and its manifest (the same
/// persistent layout, its own arena_bytes).
constexpr llvm::StringLiteral kEvalStepFunction = "fsdp_eval_step";
constexpr llvm::StringLiteral kEvalManifestGlobal = "fsdp_eval_manifest";
constexpr llvm::StringLiteral kEvalKernelOriginsGlobal = "fsdp_eval_kernel_origins";

constexpr llvm::StringLiteral kAllGatherStart = "fsdprt_all_gather_start";
constexpr llvm::StringLiteral kReduceScatterStart = "fsdprt_reduce_scatter_start";
constexpr llvm::StringLiteral kAllReduceStart = "fsdprt_all_reduce_start";
constexpr llvm::StringLiteral kWait = "fsdprt_wait";
/// The operand of a collective's start call that names its group
/// (FSDPRT_GROUP_*), or none for another callee.
inline std::optional<unsigned> collectiveGroupOperand(llvm::StringRef callee) {
  if (callee == kAllGatherStart)
    return 3;
  if (callee == kReduceScatterStart)
    return 5;
  if (callee == kAllReduceStart)
    return 4;
  return std::nullopt;
}
/// `int32_t fsdprt_group_rank(int32_t group)`: the rank's index in a group
/// (the block of the sequence a tensor rank holds).
constexpr llvm::StringLiteral kGroupRank = "fsdprt_group_rank";
/// `int32_t fsdprt_copy_to_host_start(void *host, const void *device, int64_t
/// bytes)` and `fsdprt_copy_to_device_start(void *device, const void *host,
/// int64_t bytes)`: offload's copies on the copy stream, waited for with
/// fsdprt_wait (which blocks the host until a copy to the host is done).
constexpr llvm::StringLiteral kCopyToHostStart = "fsdprt_copy_to_host_start";
constexpr llvm::StringLiteral kCopyToDeviceStart = "fsdprt_copy_to_device_start";
/// `void fsdprt_host_parallel(fsdprt_host_task task, void *host_arena, float
/// lr, int64_t step, float coefficient, int64_t count)`: offload's update,
/// `task(host_arena, lr, step, coefficient, begin, end)` on chunks of [0,
/// count) on the host's threads.
constexpr llvm::StringLiteral kHostParallel = "fsdprt_host_parallel";
constexpr llvm::StringLiteral kGemm = "fsdprt_sgemm";
constexpr llvm::StringLiteral kBatchedGemm = "fsdprt_sgemm_batched";
constexpr llvm::StringLiteral kGemmBF16 = "fsdprt_gemm_bf16";
constexpr llvm::StringLiteral kBatchedGemmBF16 = "fsdprt_gemm_bf16_batched";
/// fsdprt_sgemm's arguments and then a row vector `bias` added to every row
/// of C before it is stored (the CUDA target's bias epilogue).
constexpr llvm::StringLiteral kGemmBias = "fsdprt_sgemm_bias";
/// The alignment in bytes fsdprt_sgemm_bias needs of its bias on the CUDA
/// backend (cuBLASLt's epilogue loads it 16 bytes at a time).
constexpr int64_t kGemmBiasAlignment = 16;

/// `fsdprt_attention_bf16(batch, heads, kv_heads, seq, head_dim, causal,
/// scale, layout, query, key, value, out, lse, workspace, workspace_bytes)` and
/// `fsdprt_attention_grad_bf16(..., scale, layout, deterministic, query, key,
/// value, out, lse, out_grad, query_grad, key_grad, value_grad, workspace,
/// workspace_bytes)`: fused attention on the compute stream (fsdp-fuse-attention).
constexpr llvm::StringLiteral kAttentionBF16 = "fsdprt_attention_bf16";
constexpr llvm::StringLiteral kAttentionGradBF16 = "fsdprt_attention_grad_bf16";

/// Whether `callee` is one of the runtime's matrix products, which run on
/// the compute stream; A and B are their first two pointers, C the third.
inline bool isGemmCallee(llvm::StringRef callee) {
  return callee == kGemm || callee == kBatchedGemm || callee == kGemmBF16 ||
         callee == kBatchedGemmBF16 || callee == kGemmBias;
}
/// Whether the product `callee` is of bf16 matrices.
inline bool isBF16GemmCallee(llvm::StringRef callee) {
  return callee == kGemmBF16 || callee == kBatchedGemmBF16;
}
/// Whether the product `callee` is batched (its batch count after trans_b).
inline bool isBatchedGemmCallee(llvm::StringRef callee) {
  return callee == kBatchedGemm || callee == kBatchedGemmBF16;
}

/// FSDPRT_ATTENTION_*: how an attention call's operands and results lie,
/// [B, H, S, D] or [B, S, H, D] (the log-sum-exp [B, H, S] either way).
enum class RuntimeAttentionLayout : int32_t {
  BHSD = FSDPRT_ATTENTION_BHSD,
  BSHD = FSDPRT_ATTENTION_BSHD
};

/// FSDPRT_DTYPE_*: the element type of a reduction.
enum class RuntimeDType : int32_t { F32 = FSDPRT_DTYPE_F32, BF16 = FSDPRT_DTYPE_BF16 };

// The CUDA target's host code (docs/Runtime.md, section 7).

/// `void *fsdprt_stream(int32_t stream)`: the cudaStream_t of a stream.
constexpr llvm::StringLiteral kStream = "fsdprt_stream";
/// `void fsdprt_event_record(int32_t event, int32_t stream)`.
constexpr llvm::StringLiteral kEventRecord = "fsdprt_event_record";
/// `void fsdprt_stream_wait_event(int32_t stream, int32_t event)`.
constexpr llvm::StringLiteral kStreamWaitEvent = "fsdprt_stream_wait_event";

/// FSDPRT_STREAM_*: kernels and GEMMs run on the compute stream, all-gathers
/// on their own, reduce-scatters and all-reduces on a third, offload's copies
/// between host and device on a fourth, the tensor group's collectives of
/// every kind on a fifth.
enum class RuntimeStream : int32_t {
  Compute = FSDPRT_STREAM_COMPUTE,
  AllGather = FSDPRT_STREAM_ALL_GATHER,
  ReduceScatter = FSDPRT_STREAM_REDUCE_SCATTER,
  Copy = FSDPRT_STREAM_COPY,
  Tensor = FSDPRT_STREAM_TENSOR
};
constexpr int kNumRuntimeStreams = FSDPRT_STREAM_COUNT;
/// Event ids are in [0, kMaxRuntimeEvents).
constexpr int kMaxRuntimeEvents = FSDPRT_MAX_EVENTS;

/// The arena's alignment: every region and buffer the compiler places in it
/// starts at a multiple of it.
constexpr int64_t kArenaAlignment = FSDPRT_ARENA_ALIGNMENT;

} // namespace mlir::fsdp

#endif // FSDP_UTILS_RUNTIMEABI_H
