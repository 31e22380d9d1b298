//===- Bf16Gemm.h - Which way the CPU's bf16 products go --------*- C++ -*-===//
//
// fsdprt_gemm_bf16(_batched) run on oneDNN's bf16 matmul where the CPU has
// bf16 instructions (AMX, AVX512-BF16; OnednnMatmul.h), else they widen A
// and B to f32, multiply as f32 products (Sgemm.h: oneDNN's brgemm on any
// AVX-512 CPU) and round C once. Both paths are declared here for the
// tests, which check each against the same bounds, and for the trainer's
// report of which one a run uses.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_CPU_BF16GEMM_H
#define FSDPRT_CPU_BF16GEMM_H

#include "cpu/OnednnMatmul.h"

#include <string>

namespace fsdprt {

/// The fallback: A and B widened to f32 (the batch packed), the f32
/// products' kernels (f32Gemm), C rounded to bf16 once.
void widenedGemmBf16(const GemmBatch &product, float alpha, const void *a, const void *b,
                     float beta, void *c);

/// What bf16 products run on in this process and why, as `--version`
/// prints it (no trailing newline): "bf16 gemm: oneDNN 2.6.3,
/// avx512_core_bf16 (brg:avx512_core_bf16): bf16 instructions" or "bf16
/// gemm: widened to f32 for the f32 products' kernels, C rounded once
/// (oneDNN 2.6.3, avx512_core_vnni: no bf16 instructions)".
std::string bf16GemmLine();

} // namespace fsdprt

#endif // FSDPRT_CPU_BF16GEMM_H
