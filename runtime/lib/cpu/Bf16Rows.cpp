//===- Bf16Rows.cpp - bf16 rows widened and rounded, vectorised -----------===//
//
// Written so that GCC vectorises them (-O2 and up): the bit patterns as
// integers, and the NaN case a select rather than a branch.
//
//===----------------------------------------------------------------------===//

#include "cpu/Bf16Rows.h"

#include <cstring>

namespace fsdprt {

#define FSDPRT_VECTOR_CLONES                                                                       \
  __attribute__((target_clones("avx512f", "avx2", "default")))

FSDPRT_VECTOR_CLONES void widenBf16Row(const uint16_t *__restrict in, float *__restrict out,
                                       int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    uint32_t bits = static_cast<uint32_t>(in[j]) << 16;
    std::memcpy(&out[j], &bits, sizeof(bits));
  }
}

FSDPRT_VECTOR_CLONES void roundBf16Row(const float *__restrict in, uint16_t *__restrict out,
                                       int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    uint32_t bits;
    std::memcpy(&bits, &in[j], sizeof(bits));
    // Nearest even: add half an ulp of bf16, and one more where the kept
    // part is odd; a NaN keeps its sign and top bits, made quiet.
    uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
    uint32_t quiet = (bits >> 16) | 0x40u;
    out[j] = static_cast<uint16_t>((bits & 0x7FFFFFFFu) > 0x7F800000u ? quiet : rounded);
  }
}

namespace {

/// Below this many elements one thread converts a matrix: starting the
/// others costs more than the loop.
constexpr int64_t kParallelElements = 1 << 16;

template <typename RowFn> void forEachRow(int64_t rows, int64_t cols, int threads, RowFn fn) {
  if (rows * cols < kParallelElements)
    threads = 1;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < rows; ++i)
    fn(i);
}

} // namespace

void widenBf16Matrix(const uint16_t *in, int64_t inLd, float *out, int64_t outLd, int64_t rows,
                     int64_t cols, int threads) {
  forEachRow(rows, cols, threads,
             [=](int64_t i) { widenBf16Row(in + i * inLd, out + i * outLd, cols); });
}

void roundBf16Matrix(const float *in, int64_t inLd, uint16_t *out, int64_t outLd, int64_t rows,
                     int64_t cols, int threads) {
  forEachRow(rows, cols, threads,
             [=](int64_t i) { roundBf16Row(in + i * inLd, out + i * outLd, cols); });
}

} // namespace fsdprt
