#!/usr/bin/env bash
# Sets up a fresh machine and runs every test: the lit suite on a release build, then the
# whole suite again on a build with AddressSanitizer + UndefinedBehaviorSanitizer (which
# is what makes the robustness test meaningful).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

"$ROOT/scripts/setup.sh"

echo "== release build"
"$ROOT/scripts/build.sh" "$ROOT/build"
cmake --build "$ROOT/build" --target check-fsdp

echo "== AddressSanitizer + UndefinedBehaviorSanitizer build"
"$ROOT/scripts/build.sh" "$ROOT/build-asan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFSDP_ENABLE_SANITIZERS=ON
cmake --build "$ROOT/build-asan" --target check-fsdp

echo "== all tests passed"
