#!/usr/bin/env bash
# Sets up a fresh machine, builds FSDP-MLIR and runs it on the bundled examples:
# fsdp-opt verifies each model and pretty-prints it.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

"$ROOT/scripts/setup.sh"
"$ROOT/scripts/build.sh" "$ROOT/build"

for model in "$ROOT"/examples/*.mlir; do
  echo "== fsdp-opt ${model#"$ROOT"/}"
  "$ROOT/build/bin/fsdp-opt" "$model"
done
