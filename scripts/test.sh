#!/usr/bin/env bash
# Sets up a fresh machine and runs every test: the lit suite (dialect, passes,
# robustness, end to end against the NumPy reference) and the runtime's unit tests, on a
# release build, then again on a build with AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
JOBS="$(nproc)"

"$ROOT/scripts/setup.sh"

run_suite() {
  local build="$1"
  shift
  "$ROOT/scripts/build.sh" "$build" "$@"
  cmake --build "$build" --target check-fsdp
  ctest --test-dir "$build/runtime" --output-on-failure -j "$JOBS"
}

echo "== release build"
run_suite "$ROOT/build"

echo "== AddressSanitizer + UndefinedBehaviorSanitizer build"
run_suite "$ROOT/build-asan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFSDP_ENABLE_SANITIZERS=ON

echo "== all tests passed"
