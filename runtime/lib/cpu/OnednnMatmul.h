//===- OnednnMatmul.h - bf16 products on oneDNN's matmul --------*- C++ -*-===//
//
// fsdprt_gemm_bf16(_batched) on the CPU's fastest matrix unit: oneDNN picks
// its kernels for the running CPU (AMX on Sapphire Rapids, else AVX512-BF16,
// else bf16 emulated on avx512_core), bf16 operands, f32 accumulation, one
// rounding to bf16 (nearest even) when C is stored. Where oneDNN has no such
// matmul (AVX2 and older, or DNNL_MAX_CPU_ISA=AVX2) the caller falls back to
// widening to f32 and OpenBLAS (Bf16Gemm.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_CPU_ONEDNNMATMUL_H
#define FSDPRT_CPU_ONEDNNMATMUL_H

#include "GemmArguments.h"

#include <optional>
#include <string>

namespace fsdprt {

/// `batch` products of `gemm`'s form (checked by checkGemm/checkGemmBatch),
/// whose matrices lie stride_a, stride_b and stride_c elements apart (any
/// value when batch is 1).
struct Bf16Batch {
  GemmShape gemm;
  int64_t batch = 1;
  int64_t strideA = 0, strideB = 0, strideC = 0;
};

/// C = alpha * op(A) op(B) + beta * C on oneDNN, for a product with k > 0.
/// Returns false, writing nothing, when oneDNN has no bf16 matmul for it on
/// this CPU (or only its scalar reference code): the caller then computes it.
bool onednnGemmBf16(const Bf16Batch &product, float alpha, const void *a, const void *b,
                    float beta, void *c);

/// What oneDNN runs bf16 products with on this CPU, e.g. "oneDNN 2.6.3,
/// avx512_core_bf16 (brg:avx512_core_bf16)"; nullopt when it has no bf16
/// matmul here.
std::optional<std::string> onednnBf16Kernel();

/// "oneDNN 2.6.3" and the ISA it may use here, e.g. "avx2", for the line that
/// says why it is not used.
std::string onednnVersionAndIsa();

} // namespace fsdprt

#endif // FSDPRT_CPU_ONEDNNMATMUL_H
