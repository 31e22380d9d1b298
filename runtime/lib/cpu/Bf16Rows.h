//===- Bf16Rows.h - bf16 rows widened and rounded, vectorised ----*- C++ -*-===//
//
// The widened bf16 products (Bf16Gemm.cpp) convert every element of A and B
// to f32 and every element of C back: on a CPU without bf16 instructions
// that traffic is what a bf16 product costs beyond an f32 one. These loops
// do the conversions of abi/DType.h (bf16ToFloat, floatToBF16: rounding to
// nearest even, NaNs kept quiet) on whole rows, compiled for AVX-512, AVX2
// and baseline x86-64 and chosen when the trainer starts (GCC's
// target_clones), so that they run at the machine's vector width whatever
// CPU the runtime was built on. Every version gives the same bits. Whole
// matrices go a row at a time.
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_CPU_BF16ROWS_H
#define FSDPRT_CPU_BF16ROWS_H

#include <cstdint>

namespace fsdprt {

/// out[j] = bf16ToFloat(in[j]) for j < n.
void widenBf16Row(const uint16_t *in, float *out, int64_t n);

/// out[j] = floatToBF16(in[j]) for j < n.
void roundBf16Row(const float *in, uint16_t *out, int64_t n);

/// The rows x cols bf16 matrix at `in` (row stride inLd) widened into the
/// f32 one at `out` (row stride outLd), its rows on `threads` OpenMP threads
/// when it is large enough to pay for starting them.
void widenBf16Matrix(const uint16_t *in, int64_t inLd, float *out, int64_t outLd, int64_t rows,
                     int64_t cols, int threads);

/// The rows x cols f32 matrix at `in` rounded into the bf16 one at `out`,
/// likewise.
void roundBf16Matrix(const float *in, int64_t inLd, uint16_t *out, int64_t outLd, int64_t rows,
                     int64_t cols, int threads);

} // namespace fsdprt

#endif // FSDPRT_CPU_BF16ROWS_H
