//===- OnednnMatmul.h - Products on oneDNN's matmul -------------*- C++ -*-===//
//
// The CPU's products on oneDNN, which picks its kernels for the running CPU.
// bf16 (fsdprt_gemm_bf16): AMX on Sapphire Rapids, else AVX512-BF16, else
// bf16 emulated on avx512_core; bf16 operands, f32 accumulation, one rounding
// to bf16 (nearest even) when C is stored. f32 (fsdprt_sgemm): oneDNN's
// brgemm kernels (AVX-512 and newer), measured faster than OpenBLAS sgemm
// (bench/README.md); its older jit gemm was not, and is not used. Where
// oneDNN has no such kernel for a product (AVX2 and older, or
// DNNL_MAX_CPU_ISA=AVX2) the caller computes it with OpenBLAS (Sgemm.cpp,
// Bf16Gemm.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_CPU_ONEDNNMATMUL_H
#define FSDPRT_CPU_ONEDNNMATMUL_H

#include "abi/GemmArguments.h"

#include <optional>
#include <string>

namespace fsdprt {

/// The element type of a product's A, B and C (accumulation is f32).
enum class MatmulType { F32, Bf16 };

/// `batch` products of `gemm`'s form (checked by checkGemm/checkGemmBatch),
/// whose matrices lie stride_a, stride_b and stride_c elements apart (any
/// value when batch is 1).
struct GemmBatch {
  GemmShape gemm;
  int64_t batch = 1;
  int64_t strideA = 0, strideB = 0, strideC = 0;
};

/// C = alpha * op(A) op(B) + beta * C on oneDNN, for a product with k > 0
/// whose matrices hold `type` elements. Returns false, writing nothing, when
/// oneDNN has no kernel of ours for it on this CPU (see above; never its
/// scalar reference code): the caller then computes it.
bool onednnGemm(MatmulType type, const GemmBatch &product, float alpha, const void *a,
                const void *b, float beta, void *c);

/// What oneDNN runs `type` products with on this CPU, e.g. "oneDNN 2.6.3,
/// avx512_core_bf16 (brg:avx512_core_bf16)"; nullopt when it has no kernel of
/// ours here.
std::optional<std::string> onednnKernel(MatmulType type);

/// "oneDNN 2.6.3" and the ISA it may use here, e.g. "avx2", for the line that
/// says why it is not used.
std::string onednnVersionAndIsa();

} // namespace fsdprt

#endif // FSDPRT_CPU_ONEDNNMATMUL_H
