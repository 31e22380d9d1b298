//===- OnednnIsa.h - Which oneDNN kernels a test can expect ------*- C++ -*-===//
//
// The GEMM suites (Bf16GemmTest.cpp, SgemmTest.cpp) expect oneDNN's kernels
// on an AVX-512 CPU and the OpenBLAS fallbacks when DNNL_MAX_CPU_ISA caps
// oneDNN below it (ctest's fsdprt-tests.gemm-fallback).
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_TEST_ONEDNNISA_H
#define FSDPRT_TEST_ONEDNNISA_H

#include <cctype>
#include <cstdlib>
#include <string>

namespace test {

/// Whether DNNL_MAX_CPU_ISA caps oneDNN below avx512_core, where it has none
/// of the kernels the runtime uses.
inline bool isaCappedBelowAvx512() {
  const char *cap = std::getenv("DNNL_MAX_CPU_ISA");
  if (!cap)
    return false;
  std::string isa;
  for (const char *p = cap; *p; ++p)
    isa.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(*p))));
  return isa == "sse41" || isa == "avx" || isa == "avx2" || isa == "avx2_vnni";
}

/// Whether this CPU has avx512_core (F, BW, VL, DQ), oneDNN's brgemm ISA.
inline bool hasAvx512Core() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}

} // namespace test

#endif // FSDPRT_TEST_ONEDNNISA_H
