//===- Sgemm.h - Which way the CPU's f32 products go ------------*- C++ -*-===//
//
// fsdprt_sgemm(_batched) run on oneDNN's f32 brgemm matmul where oneDNN has
// it for the product on this CPU (OnednnMatmul.h), else on OpenBLAS
// cblas_sgemm. Both paths are declared here for the tests, which check each
// against the same naive products, for the widened bf16 fallback, and for
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

/// What f32 products run on in this process, as `--version` prints it:
/// "f32 gemm: oneDNN 2.6.3, avx512_core (brg:avx512_core)" or "f32 gemm:
/// OpenBLAS sgemm (...)" (no trailing newline).
std::string f32GemmLine();

} // namespace fsdprt

#endif // FSDPRT_CPU_SGEMM_H
