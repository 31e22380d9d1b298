//===- OpenblasCore.h - Whether OpenBLAS's kernels suit this CPU -*- C++ -*-===//
//
// Debian's OpenBLAS is built for every x86-64 (DYNAMIC_ARCH) and picks its
// kernel set (its "core") when it is loaded, from the CPU's family and model
// numbers, unless OPENBLAS_CORETYPE names one. A CPU whose model its tables
// do not know (a hypervisor's "Intel(R) Xeon(R) Processor", a newer part)
// gets the generic SSE3 kernels, Prescott's: a quarter of the machine's
// rate on an AVX-512 Xeon (bench/README.md). The trainer cannot choose for
// it: OpenBLAS reads the variable in its library constructor, before main,
// and even an executable's DT_PREINIT_ARRAY, which runs earlier, cannot set
// it (libc's own initialisation, which runs after it, resets the
// environment to the one the process started with). So the runtime judges
// the core OpenBLAS runs against the CPU's vector instructions, and where it
// is generic the products route around OpenBLAS (Sgemm.h); the version line
// names the core that would suit the CPU:
//
//   AVX-512 (F, BW, DQ, VL) with AVX512-BF16   Cooperlake
//   AVX-512 (F, BW, DQ, VL)                    SkylakeX
//   AVX2 and FMA                               Haswell
//
// (the cores OpenBLAS itself picks on the CPUs it knows: a Zen 4 is
// "Cooperlake" to OpenBLAS 0.3.21, a Zen 2 "Haswell" in Debian's build).
//
//===----------------------------------------------------------------------===//

#ifndef FSDPRT_CPU_OPENBLASCORE_H
#define FSDPRT_CPU_OPENBLASCORE_H

#include <optional>
#include <string>
#include <string_view>

namespace fsdprt {

/// The widest vector instructions a CPU (or an OpenBLAS core's kernels) use.
enum class VectorLevel { Sse, Avx, Avx2, Avx512 };

/// The vector instructions of a CPU that the judgement reads, from CPUID
/// (and the operating system's XSAVE support, as GCC's
/// __builtin_cpu_supports checks it).
struct CpuVectorFeatures {
  bool avx = false, avx2 = false, fma = false;
  bool avx512f = false, avx512bw = false, avx512dq = false, avx512vl = false;
  bool avx512bf16 = false;
};

/// This CPU's.
CpuVectorFeatures detectCpuVectorFeatures();

/// The widest level of `cpu`: AVX-512 needs F, BW, DQ and VL, AVX2 needs FMA.
VectorLevel vectorLevel(const CpuVectorFeatures &cpu);

/// The OpenBLAS core that suits `cpu` (the table above); nullopt below AVX2.
std::optional<std::string_view> openblasCoreFor(const CpuVectorFeatures &cpu);

/// The level of the kernels of the OpenBLAS core named `core` (as
/// openblas_get_corename() spells it, any case): Prescott, Core2, Nehalem
/// and the other SSE cores are Sse.
VectorLevel openblasCoreLevel(std::string_view core);

/// "AVX-512", "AVX2", "AVX", "SSE".
std::string_view levelName(VectorLevel level);

/// Whether OpenBLAS runs a core below AVX2 on a CPU with AVX2 and FMA (a
/// generic core: what OpenBLAS falls back to for a CPU it does not know, or
/// a user's OPENBLAS_CORETYPE=Prescott); the products then route around it.
bool openblasCoreIsGeneric();

/// The core OpenBLAS runs and why, as `--version`'s blas line gives it:
/// "core SkylakeX (OpenBLAS's choice)", "core Prescott
/// (OPENBLAS_CORETYPE=Prescott; generic on this AVX-512 CPU, which SkylakeX
/// suits)".
std::string openblasCoreDescription();

} // namespace fsdprt

#endif // FSDPRT_CPU_OPENBLASCORE_H
