//===- OpenblasCoreTest.cpp - Whether OpenBLAS's kernels suit this CPU ----===//
//
// The judgement of OpenblasCore.h on the CPUs the project meets (whatever
// this machine is), and on this machine: the core OpenBLAS runs is generic
// exactly when its kernels are below AVX2 on a CPU with AVX2, and the version
// line says so (ctest's fsdprt-tests.gemm-no-bf16 forces Prescott's).
//
//===----------------------------------------------------------------------===//

#include "cpu/OpenblasCore.h"

#include <cblas.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

using namespace fsdprt;
using testing::HasSubstr;

namespace {

CpuVectorFeatures avx2() {
  CpuVectorFeatures cpu;
  cpu.avx = cpu.avx2 = cpu.fma = true;
  return cpu;
}

CpuVectorFeatures avx512() {
  CpuVectorFeatures cpu = avx2();
  cpu.avx512f = cpu.avx512bw = cpu.avx512dq = cpu.avx512vl = true;
  return cpu;
}

} // namespace

TEST(OpenblasCore, TheRuleOnTheCpusSeen) {
  // A Xeon with AVX-512 and no BF16 (whose hidden model OpenBLAS 0.3.21 does
  // not know), a Zen 4 or Sapphire Rapids (AVX512-BF16), an EPYC with AVX2.
  CpuVectorFeatures xeon = avx512();
  EXPECT_EQ(openblasCoreFor(xeon), "SkylakeX");
  CpuVectorFeatures zen4 = avx512();
  zen4.avx512bf16 = true;
  EXPECT_EQ(openblasCoreFor(zen4), "Cooperlake");
  EXPECT_EQ(openblasCoreFor(avx2()), "Haswell");
}

TEST(OpenblasCore, OlderCpusKeepOpenblasChoice) {
  CpuVectorFeatures avxOnly;
  avxOnly.avx = true;
  EXPECT_EQ(openblasCoreFor(avxOnly), std::nullopt);
  EXPECT_EQ(openblasCoreFor(CpuVectorFeatures{}), std::nullopt);
  // AVX2 without FMA has none of Haswell's kernels.
  CpuVectorFeatures noFma = avx2();
  noFma.fma = false;
  EXPECT_EQ(vectorLevel(noFma), VectorLevel::Avx);
  EXPECT_EQ(openblasCoreFor(noFma), std::nullopt);
  // AVX-512 without BW, DQ or VL (Knights Landing) is not Skylake's.
  CpuVectorFeatures knl = avx512();
  knl.avx512bw = false;
  EXPECT_EQ(openblasCoreFor(knl), "Haswell");
}

TEST(OpenblasCore, CoreLevels) {
  EXPECT_EQ(openblasCoreLevel("SkylakeX"), VectorLevel::Avx512);
  EXPECT_EQ(openblasCoreLevel("COOPERLAKE"), VectorLevel::Avx512);
  EXPECT_EQ(openblasCoreLevel("Haswell"), VectorLevel::Avx2);
  EXPECT_EQ(openblasCoreLevel("Zen"), VectorLevel::Avx2);
  EXPECT_EQ(openblasCoreLevel("Sandybridge"), VectorLevel::Avx);
  for (const char *generic : {"Prescott", "Core2", "Nehalem", "Atom", "Unknown"})
    EXPECT_EQ(openblasCoreLevel(generic), VectorLevel::Sse) << generic;
}

TEST(OpenblasCore, ThisProcessJudgesItsCore) {
  std::string core = openblas_get_corename();
  std::string description = openblasCoreDescription();
  const char *forced = std::getenv("OPENBLAS_CORETYPE");
  EXPECT_THAT(description,
              testing::StartsWith("core " + core + " (" +
                                  (forced ? "OPENBLAS_CORETYPE=" + std::string(forced)
                                          : std::string("OpenBLAS's choice"))));
  CpuVectorFeatures cpu = detectCpuVectorFeatures();
  bool generic = openblasCoreLevel(core) < VectorLevel::Avx2 && vectorLevel(cpu) >= VectorLevel::Avx2;
  EXPECT_EQ(openblasCoreIsGeneric(), generic);
  if (generic) {
    EXPECT_THAT(description, HasSubstr("; generic on this " +
                                       std::string(levelName(vectorLevel(cpu))) + " CPU, which " +
                                       std::string(*openblasCoreFor(cpu)) + " suits)"));
  } else {
    EXPECT_THAT(description, testing::Not(HasSubstr("generic")));
  }
}
