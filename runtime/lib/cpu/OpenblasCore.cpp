//===- OpenblasCore.cpp - Whether OpenBLAS's kernels suit this CPU --------===//

#include "cpu/OpenblasCore.h"

#include <cblas.h>

#include <strings.h>

#include <cstdlib>

namespace fsdprt {

namespace {

bool sameCore(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

} // namespace

CpuVectorFeatures detectCpuVectorFeatures() {
  __builtin_cpu_init();
  CpuVectorFeatures cpu;
  cpu.avx = __builtin_cpu_supports("avx");
  cpu.avx2 = __builtin_cpu_supports("avx2");
  cpu.fma = __builtin_cpu_supports("fma");
  cpu.avx512f = __builtin_cpu_supports("avx512f");
  cpu.avx512bw = __builtin_cpu_supports("avx512bw");
  cpu.avx512dq = __builtin_cpu_supports("avx512dq");
  cpu.avx512vl = __builtin_cpu_supports("avx512vl");
  cpu.avx512bf16 = __builtin_cpu_supports("avx512bf16");
  return cpu;
}

VectorLevel vectorLevel(const CpuVectorFeatures &cpu) {
  if (cpu.avx512f && cpu.avx512bw && cpu.avx512dq && cpu.avx512vl)
    return VectorLevel::Avx512;
  if (cpu.avx2 && cpu.fma)
    return VectorLevel::Avx2;
  return cpu.avx ? VectorLevel::Avx : VectorLevel::Sse;
}

std::optional<std::string_view> openblasCoreFor(const CpuVectorFeatures &cpu) {
  switch (vectorLevel(cpu)) {
  case VectorLevel::Avx512:
    return cpu.avx512bf16 ? "Cooperlake" : "SkylakeX";
  case VectorLevel::Avx2:
    return "Haswell";
  default:
    return std::nullopt;
  }
}

VectorLevel openblasCoreLevel(std::string_view core) {
  for (std::string_view name : {"SkylakeX", "Cooperlake", "SapphireRapids"})
    if (sameCore(core, name))
      return VectorLevel::Avx512;
  for (std::string_view name : {"Haswell", "Zen"})
    if (sameCore(core, name))
      return VectorLevel::Avx2;
  for (std::string_view name : {"Sandybridge", "Bulldozer", "Piledriver", "Steamroller",
                                "Excavator"})
    if (sameCore(core, name))
      return VectorLevel::Avx;
  return VectorLevel::Sse;
}

std::string_view levelName(VectorLevel level) {
  switch (level) {
  case VectorLevel::Avx512:
    return "AVX-512";
  case VectorLevel::Avx2:
    return "AVX2";
  case VectorLevel::Avx:
    return "AVX";
  case VectorLevel::Sse:
    return "SSE";
  }
  return "";
}

namespace {

bool isGeneric(std::string_view core, const CpuVectorFeatures &cpu) {
  return openblasCoreLevel(core) < VectorLevel::Avx2 && vectorLevel(cpu) >= VectorLevel::Avx2;
}

} // namespace

bool openblasCoreIsGeneric() {
  return isGeneric(openblas_get_corename(), detectCpuVectorFeatures());
}

std::string openblasCoreDescription() {
  std::string core = openblas_get_corename();
  const char *forced = std::getenv("OPENBLAS_CORETYPE");
  std::string why = forced && *forced ? std::string("OPENBLAS_CORETYPE=") + forced
                                      : std::string("OpenBLAS's choice");
  CpuVectorFeatures cpu = detectCpuVectorFeatures();
  if (isGeneric(core, cpu))
    why += "; generic on this " + std::string(levelName(vectorLevel(cpu))) + " CPU, which " +
           std::string(*openblasCoreFor(cpu)) + " suits";
  return "core " + core + " (" + why + ")";
}

} // namespace fsdprt
