//===- OnednnIsa.h - Which oneDNN kernels a test can expect ------*- C++ -*-===//
//
// The GEMM suites (Bf16GemmTest.cpp, SgemmTest.cpp) expect oneDNN's brgemm
// kernels on an AVX-512 CPU, its bf16 ones where the CPU has bf16
// instructions, and the fallbacks where DNNL_MAX_CPU_ISA caps oneDNN below
// them (ctest's fsdprt-tests.gemm-fallback and fsdprt-tests.gemm-no-bf16).
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_TEST_CPU_ONEDNNISA_H
#define FSDPRT_TEST_CPU_ONEDNNISA_H

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <iterator>
#include <string>

namespace test {

/// oneDNN 2.x's x86 ISAs from the oldest, as DNNL_MAX_CPU_ISA spells them.
inline constexpr const char *kOnednnIsas[] = {"sse41",       "avx",
                                              "avx2",        "avx2_vnni",
                                              "avx512_core", "avx512_core_vnni",
                                              "avx512_core_bf16", "avx512_core_amx"};

/// Whether DNNL_MAX_CPU_ISA caps oneDNN below `isa` (one of kOnednnIsas).
inline bool isaCappedBelow(const std::string &isa) {
  const char *cap = std::getenv("DNNL_MAX_CPU_ISA");
  if (!cap)
    return false;
  std::string capped;
  for (const char *p = cap; *p; ++p)
    capped.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(*p))));
  auto rank = [](const std::string &name) {
    return std::find(std::begin(kOnednnIsas), std::end(kOnednnIsas), name) -
           std::begin(kOnednnIsas);
  };
  return rank(capped) < rank(isa);
}

/// Whether DNNL_MAX_CPU_ISA caps oneDNN below avx512_core, where it has none
/// of its brgemm kernels.
inline bool isaCappedBelowAvx512() { return isaCappedBelow("avx512_core"); }

/// Whether this CPU has avx512_core (F, BW, VL, DQ), oneDNN's brgemm ISA.
inline bool hasAvx512Core() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}

/// Whether oneDNN may use bf16 instructions here: the CPU has them and
/// DNNL_MAX_CPU_ISA leaves them.
inline bool expectsNativeBf16() {
  __builtin_cpu_init();
  return hasAvx512Core() && __builtin_cpu_supports("avx512bf16") &&
         !isaCappedBelow("avx512_core_bf16");
}

} // namespace test

#endif // FSDPRT_TEST_CPU_ONEDNNISA_H
