//===- Sgemm.h - Which way the CPU's f32 products go ------------*- C++ -*-===//
//
// The rule for f32 products (fsdprt_sgemm, _batched, _bias, and bf16 ones
// widened to f32 on a CPU without bf16 instructions): oneDNN's brgemm matmul
// where oneDNN has it for the product on this CPU (OnednnMatmul.h); else
// OpenBLAS cblas_sgemm, unless the core OpenBLAS runs is generic on this CPU
// (OpenblasCore.h: a model it does not know, or OPENBLAS_CORETYPE=Prescott),
// where oneDNN's other JIT kernels take the product. Each path is declared here
// for the tests, which check each against the same naive products, and for
// the trainer's report of which one a run uses.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_CPU_SGEMM_H
#define FSDPRT_CPU_SGEMM_H

#include "cpu/OnednnMatmul.h"

#include <string>

namespace fsdprt {

/// The fallback: OpenBLAS cblas_sgemm, each product of a batch on its own.
/// The product's arguments must have been checked (checkGemm) to fit BLAS.
void openblasSgemm(const GemmBatch &product, float alpha, const float *a, const float *b,
                   float beta, float *c);

/// C = alpha * op(A) op(B) + beta * C by the rule above, for a product whose
/// arguments have been checked.
void f32Gemm(const GemmBatch &product, float alpha, const float *a, const float *b, float beta,
             float *c);

/// Whether this process's tight f32 products (rows and batches without gaps,
/// as the widened bf16 products' are) run on oneDNN, on its OpenMP threads,
/// rather than on OpenBLAS's own.
bool f32GemmsRunOnOnednn();

/// What f32 products run on in this process and why, as `--version` prints
/// it (no trailing newline): "f32 gemm: oneDNN 2.6.3, avx512_core
/// (brg:avx512_core); padded rows, gapped batches: OpenBLAS sgemm, core
/// SkylakeX", or "f32 gemm: OpenBLAS sgemm, core Haswell; no brgemm f32
/// matmul in oneDNN 2.6.3, avx2".
std::string f32GemmLine();

} // namespace fsdprt

#endif // FSDPRT_CPU_SGEMM_H
