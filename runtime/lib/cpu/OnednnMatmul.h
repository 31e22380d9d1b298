//===- OnednnMatmul.h - Products on oneDNN's matmul -------------*- C++ -*-===//
//
// The CPU's products on oneDNN, which picks its kernels for the running CPU,
// by the kernels the runtime accepts for each kind (OnednnKernels):
// bf16 only where the CPU computes bf16 products natively (AMX, AVX512-BF16;
// oneDNN's emulation of bf16 on avx512_core runs at a quarter of its f32
// rate, and the caller widens to f32 instead, Bf16Gemm.cpp); f32 on its
// brgemm kernels (AVX-512 and newer), measured faster than OpenBLAS sgemm
// (bench/README.md), or on any of its JIT kernels for the products brgemm
// does not take when OpenBLAS runs a generic core (Sgemm.cpp). bf16
// products have bf16 operands, f32 accumulation and one rounding to bf16
// (nearest even) when C is stored. Where oneDNN has no accepted kernel for
// a product the caller computes it otherwise.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_CPU_ONEDNNMATMUL_H
#define FSDPRT_CPU_ONEDNNMATMUL_H

#include "abi/GemmArguments.h"

#include <optional>
#include <string>

namespace fsdprt {

/// The oneDNN kernels a product may run on; the element type of its A, B
/// and C follows (accumulation is f32). Never oneDNN's reference code (scalar
/// C++ loops, far slower than OpenBLAS).
enum class OnednnKernels {
  /// f32 on its brgemm kernels (avx512_core and newer).
  F32Brgemm,
  /// f32 on any of its JIT kernels, its older gemm:jit included.
  F32Jit,
  /// bf16 on kernels with bf16 instructions: AVX512-BF16 or AMX.
  Bf16Native,
};

/// `batch` products of `gemm`'s form (checked by checkGemm/checkGemmBatch),
/// whose matrices lie stride_a, stride_b and stride_c elements apart (any
/// value when batch is 1).
struct GemmBatch {
  GemmShape gemm;
  int64_t batch = 1;
  int64_t strideA = 0, strideB = 0, strideC = 0;
};

/// C = alpha * op(A) op(B) + beta * C on oneDNN's `kernels`, for a product
/// with k > 0. Returns false, writing nothing, when oneDNN has none of them
/// for it on this CPU: the caller then computes it.
bool onednnGemm(OnednnKernels kernels, const GemmBatch &product, float alpha, const void *a,
                const void *b, float beta, void *c);

/// The kernel oneDNN runs a plain product on with `kernels` on this CPU,
/// e.g. "oneDNN 2.6.3, avx512_core_bf16 (brg:avx512_core_bf16)"; nullopt
/// when it has none of them here.
std::optional<std::string> onednnKernel(OnednnKernels kernels);

/// Whether oneDNN may use bf16 instructions here (its ISA, which
/// DNNL_MAX_CPU_ISA caps, is avx512_core_bf16 or newer).
bool onednnHasNativeBf16();

/// "oneDNN 2.6.3" and the ISA it may use here, e.g. "avx2", for the line that
/// says why it is not used.
std::string onednnVersionAndIsa();

} // namespace fsdprt

#endif // FSDPRT_CPU_ONEDNNMATMUL_H
