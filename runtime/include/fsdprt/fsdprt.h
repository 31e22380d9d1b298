/*===- fsdprt.h - C ABI between generated trainers and the runtime -*- C -*-===*
 *
 * A trainer is one object emitted by fsdpc, linked with libfsdprt (which also
 * provides `main`, in libfsdprt_main) and BLAS. This header is the ABI of
 * docs/Runtime.md: what the runtime provides to generated code, and what the
 * generated object provides to the runtime.
 *
 *===----------------------------------------------------------------------===*/

#ifndef FSDPRT_FSDPRT_H
#define FSDPRT_FSDPRT_H

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

/* Collectives (docs/Runtime.md, section 6). The world's ranks form a grid of
 * `replicas` x `shard_ranks` (manifest): the shard group of a rank is the
 * `shard_ranks` consecutive ranks holding the shards of one copy of the model
 * (its index in the group, rank % shard_ranks, is the shard it owns); its
 * replica group is the ranks holding the same shard (rank % shard_ranks equal).
 * Every call starts a nonblocking collective and returns a handle (in
 * [0, 256)) that one later fsdprt_wait completes; the buffers must not be
 * touched in between, and the step must wait for every handle before it
 * returns. At most 256 collectives may be pending at once. Every rank of the
 * group makes the same calls in the same order. */
enum { FSDPRT_GROUP_WORLD = 0, FSDPRT_GROUP_SHARD = 1, FSDPRT_GROUP_REPLICA = 2 };
enum { FSDPRT_REDUCE_SUM = 0, FSDPRT_REDUCE_AVG = 1 };

/* Gathers `shard_bytes` from each rank of `group` into `full`
 * (group size x shard_bytes), in group-rank order. */
int32_t fsdprt_all_gather_start(const void *shard, void *full, int64_t shard_bytes,
                                int32_t group);

/* Reduces `full` (group size x shard_count floats) elementwise over `group` and
 * leaves block (group rank) of the result in `shard`; AVG divides the sum by the
 * group size. */
int32_t fsdprt_reduce_scatter_start(const float *full, float *shard, int64_t shard_count,
                                    int32_t op, int32_t group);

/* Reduces `count` floats in place over `group` (every rank gets the result). */
int32_t fsdprt_all_reduce_start(float *data, int64_t count, int32_t op, int32_t group);

/* Completes the collective `handle` (from a *_start call). */
void fsdprt_wait(int32_t handle);

/*--- Provided by the generated object ---------------------------------------*/

/* NUL-terminated JSON manifest (docs/Runtime.md, section 2, version 2). */
extern const char fsdp_manifest[];

/* Runs forward, backward and the optimizer update of one step in place on
 * `arena` (manifest.arena_bytes bytes, 64-byte aligned) and returns this
 * rank's loss on its part of the batch, before the update (the runtime
 * averages it over the ranks). `step` counts from 1. */
float fsdp_train_step(void *arena, int64_t step, float lr);

#ifdef __cplusplus
}
#endif

#endif /* FSDPRT_FSDPRT_H */
