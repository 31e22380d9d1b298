//===- Bf16Gemm.h - Which way the CPU's bf16 products go --------*- C++ -*-===//
//
// fsdprt_gemm_bf16(_batched) run on oneDNN's bf16 matmul where the CPU has
// one (OnednnMatmul.h), else they widen A and B to f32, multiply with OpenBLAS
// and round C once. Both paths are declared here for the tests, which check
// each against the same bounds, and for the trainer's report of which one a
// run uses.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_CPU_BF16GEMM_H
#define FSDPRT_CPU_BF16GEMM_H

#include "cpu/OnednnMatmul.h"

#include <string>

namespace fsdprt {

/// The fallback: A and B widened to f32, OpenBLAS sgemm, C rounded
/// to bf16 once; each product of a batch on its own.
void widenedGemmBf16(const GemmBatch &product, float alpha, const void *a, const void *b,
                     float beta, void *c);

/// What bf16 products run on in this process, as `--version` prints it:
/// "bf16 gemm: oneDNN 2.6.3, avx512_core_bf16 (brg:avx512_core_bf16)" or
/// "bf16 gemm: f32 widen + OpenBLAS sgemm (...)" (no trailing newline).
std::string bf16GemmLine();

/// Whether fsdprt_gemm_bf16(_batched) has been called in this process.
bool bf16GemmsRan();

} // namespace fsdprt

#endif // FSDPRT_CPU_BF16GEMM_H
