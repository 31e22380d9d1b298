/*===- fsdprt.h - C ABI between generated trainers and the runtime -*- C -*-===*
 *
 * A trainer is one object emitted by fsdpc, linked with the runtime's two
 * archives: libfsdprt_main (`main`) and libfsdprt (CPU target: BLAS and MPI)
 * or libfsdprt_cuda_main and libfsdprt_cuda (CUDA target: cuBLAS, NCCL and
 * MPI). This header is the ABI of docs/Runtime.md: what the runtime provides
 * to generated code, and what the generated object provides to the runtime.
 * Both archives define every fsdprt_* function below; pointers into the arena
 * are host pointers on the CPU target and device pointers on the CUDA target.
 *
 *===----------------------------------------------------------------------===*/

#ifndef FSDPRT_FSDPRT_H
#define FSDPRT_FSDPRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*--- Provided by the runtime ------------------------------------------------*/

/* Row-major C = alpha * op(A) * op(B) + beta * C, op(X) = X or X^T (when
 * trans_x is nonzero); A is M x K after op, B is K x N after op; lda/ldb/ldc are
 * row strides in elements. As in BLAS, C is not read when beta is 0. */
void fsdprt_sgemm(int32_t trans_a, int32_t trans_b, int64_t m, int64_t n, int64_t k,
                  float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                  float beta, float *c, int64_t ldc);

/* `batch` independent products of fsdprt_sgemm's form; matrix i of A, B and C
 * starts stride_a * i, stride_b * i and stride_c * i elements after a, b, c. */
void fsdprt_sgemm_batched(int32_t trans_a, int32_t trans_b, int64_t batch, int64_t m,
                          int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                          int64_t stride_a, const float *b, int64_t ldb, int64_t stride_b,
                          float beta, float *c, int64_t ldc, int64_t stride_c);

/* fsdprt_sgemm's product on bfloat16 matrices (A, B and C hold bf16 bit
 * patterns): the products are summed in fp32, and alpha * sum + beta * C is
 * rounded to bf16 (to nearest even) when stored in C. */
void fsdprt_gemm_bf16(int32_t trans_a, int32_t trans_b, int64_t m, int64_t n, int64_t k,
                      float alpha, const void *a, int64_t lda, const void *b, int64_t ldb,
                      float beta, void *c, int64_t ldc);

/* `batch` products of fsdprt_gemm_bf16's form, laid out as in
 * fsdprt_sgemm_batched (strides in elements). */
void fsdprt_gemm_bf16_batched(int32_t trans_a, int32_t trans_b, int64_t batch, int64_t m, int64_t n,
                              int64_t k, float alpha, const void *a, int64_t lda, int64_t stride_a,
                              const void *b, int64_t ldb, int64_t stride_b, float beta, void *c,
                              int64_t ldc, int64_t stride_c);

/* fsdprt_sgemm's product with a bias epilogue (what the CUDA target calls for
 * an f32 linear layer's product and bias): `bias` is a row vector of n
 * floats, added to every row of alpha * sum + beta * C before it is stored.
 * k must be positive. On the CUDA backend `bias` must be 16-byte aligned
 * (cuBLASLt's epilogue loads it 16 bytes at a time). */
void fsdprt_sgemm_bias(int32_t trans_a, int32_t trans_b, int64_t m, int64_t n, int64_t k,
                       float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                       float beta, float *c, int64_t ldc, const float *bias);

/* How an attention's bf16 operands and results lie (`layout`): as
 * [batch, heads, seq, head_dim] (fsdp.attention's own operands), or as
 * [batch, seq, heads, head_dim] (the projections' rows, split into heads:
 * no transpose before or after the call). The log-sum-exp is
 * [batch, heads, seq] either way. */
#define FSDPRT_ATTENTION_BHSD 0
#define FSDPRT_ATTENTION_BSHD 1

/* Scaled dot-product attention on bf16 operands (fsdp.attention in a bf16
 * plan): `query` and `out` are [batch, heads, seq, head_dim], `key` and
 * `value` [batch, kv_heads, seq, head_dim], row-major and contiguous, with
 * FSDPRT_ATTENTION_BHSD (`layout`), their heads and sequence swapped with
 * FSDPRT_ATTENTION_BSHD; `heads`
 * is a multiple of `kv_heads`, and query heads g * heads / kv_heads to
 * (g + 1) * heads / kv_heads - 1 read key and value head g. out =
 * softmax(scale * query key^T) value, the scores and the softmax in f32, out
 * rounded once to bf16; with `causal`, query t attends to keys 0..t, and
 * with a `window` W > 0 as well (a sliding window, which needs `causal`) only
 * to keys t - W < s <= t (0: no window). `lse`
 * ([batch, heads, seq], f32) receives the natural log-sum-exp of each query
 * row's scaled scores. On the CUDA target it is one call of cuDNN's fused
 * attention on the compute stream, using at most `workspace_bytes` of device
 * memory at `workspace` (a shape cuDNN cannot run within them is a fatal
 * error); the CPU target computes the same in plain loops. */
void fsdprt_attention_bf16(int64_t batch, int64_t heads, int64_t kv_heads, int64_t seq,
                           int64_t head_dim, int32_t causal, int64_t window, float scale,
                           int32_t layout, const void *query, const void *key, const void *value,
                           void *out, float *lse, void *workspace, int64_t workspace_bytes);

/* The gradient of fsdprt_attention_bf16 with respect to its query, key and
 * value, from its operands, its `out` and `lse` and the gradient of `out`
 * (`out_grad`), all as laid out there; the gradients are bf16 in the layout
 * of their operand. The gradient of `lse` is taken to be zero. With
 * `deterministic` the result does not depend on the order in which the GPU
 * runs the work (on the CUDA target it then needs more workspace). */
void fsdprt_attention_grad_bf16(int64_t batch, int64_t heads, int64_t kv_heads, int64_t seq,
                                int64_t head_dim, int32_t causal, int64_t window, float scale,
                                int32_t layout, int32_t deterministic, const void *query,
                                const void *key, const void *value, const void *out,
                                const float *lse, const void *out_grad, void *query_grad,
                                void *key_grad, void *value_grad, void *workspace,
                                int64_t workspace_bytes);

/* Collectives (docs/Runtime.md, section 6). The world's ranks form a grid of
 * `replicas` x `shard_ranks` x `tensor_ranks` (manifest), the tensor axis
 * innermost: a rank's tensor index is rank % tensor_ranks and its data index
 * d = rank / tensor_ranks. The shard group of a rank is the `shard_ranks`
 * ranks of one replica and tensor index holding the shards of one copy of
 * their blocks of the model (its index in the group, d % shard_ranks, is the
 * shard it owns); its replica group is the ranks holding the same shard of
 * the same block; its tensor group the `tensor_ranks` consecutive ranks of
 * its data index, which hold the blocks of split parameters.
 * Every call starts a nonblocking collective and returns a handle (in
 * [0, 256)) that one later fsdprt_wait completes; the buffers must not be
 * touched in between, and the step must wait for every handle before it
 * returns. At most 256 collectives may be pending at once. Every rank of the
 * group makes the same calls in the same order. */
enum {
  FSDPRT_GROUP_WORLD = 0,
  FSDPRT_GROUP_SHARD = 1,
  FSDPRT_GROUP_REPLICA = 2,
  FSDPRT_GROUP_TENSOR = 3
};
enum { FSDPRT_REDUCE_SUM = 0, FSDPRT_REDUCE_AVG = 1 };
/* The element type of a reduction. bf16 sums round each addition of two
 * elements to bf16 (to nearest even); AVG divides the sum in f32 and rounds. */
enum { FSDPRT_DTYPE_F32 = 0, FSDPRT_DTYPE_BF16 = 1 };

/* Gathers `shard_bytes` from each rank of `group` into `full`
 * (group size x shard_bytes), in group-rank order. */
int32_t fsdprt_all_gather_start(const void *shard, void *full, int64_t shard_bytes,
                                int32_t group);

/* Reduces `full` (group size x shard_count elements of `dtype`) elementwise
 * over `group` and leaves block (group rank) of the result in `shard`; AVG
 * divides the sum by the group size. */
int32_t fsdprt_reduce_scatter_start(const void *full, void *shard, int64_t shard_count,
                                    int32_t dtype, int32_t op, int32_t group);

/* Reduces `count` elements of `dtype` in place over `group` (every rank gets
 * the result). */
int32_t fsdprt_all_reduce_start(void *data, int64_t count, int32_t dtype, int32_t op,
                                int32_t group);

/* This rank's index in `group` (0 to its size - 1): which block of a value
 * split over the group it holds (a tensor rank's block of the sequence,
 * fsdp.tensor_chunk). Unknown groups are fatal. */
int32_t fsdprt_group_rank(int32_t group);

/* Completes the collective or copy `handle` (from a *_start call). On the
 * CUDA target it makes the compute stream wait for it; the host does not
 * block, except for a copy to the host, whose bytes the host reads next. */
void fsdprt_wait(int32_t handle);

/* offload = optimizer (docs/Runtime.md, section 6): `bytes` from the device's
 * arena to the host arena, and back, on the copy stream. They return handles
 * of the same table as the collectives, for fsdprt_wait. On the CPU target
 * both are copies in host memory, done when they return. */
int32_t fsdprt_copy_to_host_start(void *host, const void *device, int64_t bytes);
int32_t fsdprt_copy_to_device_start(void *device, const void *host, int64_t bytes);

/* offload = optimizer's update of one unit on the host: the compiler's `task`
 * applied to elements [begin, end) of the unit's shard, for chunks covering
 * [0, count), on the runtime's host threads (FSDPRT_HOST_THREADS, else the
 * hardware threads shared among the node's ranks); returns when all are done.
 * `coefficient` is the clipping scale (1 without clipping). */
typedef void (*fsdprt_host_task)(void *host_arena, float lr, int64_t step, float coefficient,
                                 int64_t begin, int64_t end);
void fsdprt_host_parallel(fsdprt_host_task task, void *host_arena, float lr, int64_t step,
                          float coefficient, int64_t count);

/* Streams and events (docs/Runtime.md, section 7). On the CUDA target a step
 * launches its kernels and GEMMs on the compute stream; all-gathers run on the
 * all-gather stream, reduce-scatters and all-reduces on the reduce-scatter
 * stream, every collective of the tensor group (FSDPRT_GROUP_TENSOR: the
 * tensor-parallel regions' sums, gathers and scatters) on the tensor stream,
 * so that none waits behind FSDP's gathers of the next units, and a *_start
 * does not wait for earlier work of another stream: the
 * step orders them with events. On the CPU target everything runs in program
 * order: the streams are NULL and the calls only check their arguments. An
 * unknown stream, an event outside [0, FSDPRT_MAX_EVENTS) or a wait on an event not
 * recorded earlier in the same step is a fatal error on both. */
enum {
  FSDPRT_STREAM_COMPUTE = 0,
  FSDPRT_STREAM_ALL_GATHER = 1,
  FSDPRT_STREAM_REDUCE_SCATTER = 2,
  FSDPRT_STREAM_COPY = 3,
  FSDPRT_STREAM_TENSOR = 4,
  FSDPRT_STREAM_COUNT = 5
};
/* Event ids are in [0, FSDPRT_MAX_EVENTS). */
enum { FSDPRT_MAX_EVENTS = 65536 };

/* The stream (a cudaStream_t; NULL on the CPU target) the step launches its
 * kernels on. */
void *fsdprt_stream(int32_t stream);

/* Records event `event` (0 <= event < FSDPRT_MAX_EVENTS; created on first use) on `stream`. */
void fsdprt_event_record(int32_t event, int32_t stream);

/* Later work on `stream` waits for the last recording of `event` in this step. */
void fsdprt_stream_wait_event(int32_t stream, int32_t event);

/*--- Provided by the CUDA archive only --------------------------------------*/

/* What MLIR's gpu.launch_func translation calls (docs/Runtime.md, section 7).
 * mgpuModuleLoad runs in a global constructor, before main: it only records
 * the fatbin, which is loaded at the first mgpuModuleGetFunction, once the
 * trainer has chosen its device. mgpuModuleGetFunction's result is only
 * meant for mgpuLaunchKernel. */
void *mgpuModuleLoad(void *data, size_t size);
void mgpuModuleUnload(void *module);
void *mgpuModuleGetFunction(void *module, const char *name);
void mgpuLaunchKernel(void *function, intptr_t grid_x, intptr_t grid_y, intptr_t grid_z,
                      intptr_t block_x, intptr_t block_y, intptr_t block_z, int32_t smem,
                      void *stream, void **params, void **extra, size_t params_count);
/* A stream for a launch without one: it first waits for the compute stream's
 * work so far. */
void *mgpuStreamCreate(void);
void mgpuStreamSynchronize(void *stream);
void mgpuStreamDestroy(void *stream);

/*--- Provided by the generated object ---------------------------------------*/

/* NUL-terminated JSON manifest (docs/Runtime.md, section 2, version 2). */
extern const char fsdp_manifest[];

/* The arena's alignment: the runtime allocates the arena and the host arena
 * at an address that is a multiple of it, and the compiler places every
 * region and buffer of the step at an offset that is a multiple of it. */
enum { FSDPRT_ARENA_ALIGNMENT = 64 };

/* The device scalars (manifest.device_scalars): FSDPRT_DEVICE_SCALARS_BYTES
 * of the arena's persistent part, at these byte offsets. The runtime writes
 * lr (f32) and step (i64), its first FSDPRT_DEVICE_SCALARS_RUNTIME_BYTES,
 * before each step; the step writes its loss (f32) and its optimizer's
 * factors of the step (up to FSDPRT_DEVICE_SCALARS_STEP_FACTOR_SLOTS f32s,
 * computed once a step and read by every update). */
enum {
  FSDPRT_DEVICE_SCALARS_LR = 0,
  FSDPRT_DEVICE_SCALARS_LOSS = 4,
  FSDPRT_DEVICE_SCALARS_STEP = 8,
  FSDPRT_DEVICE_SCALARS_RUNTIME_BYTES = 16,
  FSDPRT_DEVICE_SCALARS_STEP_FACTORS = 16,
  FSDPRT_DEVICE_SCALARS_STEP_FACTOR_SLOTS = 3,
  FSDPRT_DEVICE_SCALARS_BYTES = 32
};

/* Runs forward, backward and the optimizer update of one step in place on
 * `arena` (manifest.arena_bytes bytes, FSDPRT_ARENA_ALIGNMENT-aligned; in
 * device memory on the CUDA target) and returns this rank's loss on its part
 * of the batch, before the update (the runtime averages it over the ranks).
 * `step` counts from 1.
 *
 * With manifest.device_scalars (the CUDA target's manifests) the step reads
 * `lr` and `step` from the device scalars (FSDPRT_DEVICE_SCALARS_*), where
 * the runtime writes them before each step on the compute stream, and leaves
 * its loss there, which the runtime reads once the step's work on the
 * compute stream is done; the arguments are still passed
 * (for host code), and the return value is not the loss (fsdpc's step
 * returns NaN). The runtime may replay the step's device work as a CUDA
 * graph without calling it (docs/Runtime.md, section 7). */
float fsdp_train_step(void *arena, int64_t step, float lr);

/* With offload = optimizer (manifest.host_arena_bytes > 0) the same symbol
 * has this type instead: `host_arena` is the page-locked host arena of
 * manifest.host_arena_bytes bytes (docs/Offload.md). The runtime calls it
 * through a pointer of this type. */
typedef float (*fsdp_offloaded_train_step)(void *arena, void *host_arena, int64_t step, float lr);

/* The held-out evaluation step fsdpc links beside the training step
 * (docs/Runtime.md, section 1): the forward pass alone, on the batch at the
 * inputs' offsets, returning this rank's loss (or, with device_scalars,
 * leaving it at offset + 4); it changes nothing the training step keeps
 * (`step` and `lr` are not read). Its manifest has the
 * training step's persistent layout and its own arena_bytes. With offload =
 * optimizer it has the type fsdp_offloaded_train_step. A trainer linked from
 * an object without them (weak references) cannot evaluate. */
extern const char fsdp_eval_manifest[];
float fsdp_eval_step(void *arena, int64_t step, float lr);

/* CUDA trainers (fsdp-cuda-record-kernel-origins): each kernel's places in
 * the model's source, one NUL-terminated table per step, lines
 * `<kernel>\t<file:line:col>, ...`; a device error in a kernel names them. A
 * trainer linked from an object without them (weak references) names the
 * kernel alone. */
extern const char fsdp_kernel_origins[];
extern const char fsdp_eval_kernel_origins[];

#ifdef __cplusplus
}
#endif

#endif /* FSDPRT_FSDPRT_H */
