#!/usr/bin/env bash
# Sets up a fresh machine and runs every test: the lit suite (dialect, passes,
# robustness, end to end against the NumPy reference) and the runtime's unit tests, on a
# release build; the numerical end-to-end tests again as on another x86-64 (code for a
# generic CPU, another OpenBLAS kernel set); then the parser, pass and runtime tests on a
# build with AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
JOBS="$(nproc)"
STARTED=$SECONDS

"$ROOT/scripts/setup.sh"

run_suite() {
  local build="$1"
  shift
  "$ROOT/scripts/build.sh" "$build" "$@"
  cmake --build "$build" --target check-fsdp
  ctest --test-dir "$build/runtime" --output-on-failure -j "$JOBS"
}

elapsed() { echo "   ($(( (SECONDS - STARTED) / 60 )) min $(( (SECONDS - STARTED) % 60 )) s so far)"; }

echo "== release build"
run_suite "$ROOT/build"
elapsed

# A numerical test that passes only with the code generated for this CPU, or with the
# BLAS kernels OpenBLAS picks for it, fails here rather than on a user's machine.
# Haswell's kernels (AVX2) differ from those of AVX-512 machines (SkylakeX, Cooperlake,
# SapphireRapids) and of AMD's; a CPU without AVX2 gets the SSE3 ones instead. (oneDNN
# keeps the CPU's own kernels here: with DNNL_MAX_CPU_ISA=AVX2, bf16 products widened
# for OpenBLAS's Haswell kernels pass the bf16 e2e tests but one step in 32 of other data
# lands just outside the bf16 teacher bounds, what is left of an open problem of those
# bounds (test/reference/README.md); lit's --param dnnl_max_cpu_isa=AVX2 runs it.)
CORE=Haswell
grep -qw avx2 /proc/cpuinfo || CORE=Prescott
echo "== the numerical end-to-end tests as on another x86-64: fsdpc --cpu=generic, OPENBLAS_CORETYPE=$CORE"
LIT_OPTS="--param fsdpc_cpu=generic --param openblas_coretype=$CORE" \
LIT_FILTER='e2e/(.*reference|sharded|micro-batches|.*trajectory|gradcheck|mlp-trains|cuda-kernels-on-cpu|trainer-version|fsdpc-cpu)' \
  cmake --build "$ROOT/build" --target check-fsdp
elapsed

echo "== AddressSanitizer + UndefinedBehaviorSanitizer build"
# -O1 (what ASan recommends) and line tables only (enough for its stack traces): a third
# faster to compile than -O2 -g, with objects a quarter of the size.
run_suite "$ROOT/build-asan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFSDP_ENABLE_SANITIZERS=ON \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
elapsed

echo "== all tests passed"
