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

/*--- Provided by the generated object ---------------------------------------*/

/* NUL-terminated JSON manifest (docs/Runtime.md, section 2). */
extern const char fsdp_manifest[];

/* Runs forward, backward and the optimizer update of one step in place on
 * `arena` (manifest.arena_bytes bytes, 64-byte aligned) and returns the loss of
 * the batch before the update. `step` counts from 1. */
float fsdp_train_step(void *arena, int64_t step, float lr);

#ifdef __cplusplus
}
#endif

#endif /* FSDPRT_FSDPRT_H */
