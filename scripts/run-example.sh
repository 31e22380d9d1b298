#!/usr/bin/env bash
# Sets up a fresh machine, builds FSDP-MLIR, compiles examples/mlp.mlir into a native
# trainer with fsdpc and trains it for 200 steps on the built-in synthetic data.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

"$ROOT/scripts/setup.sh"
"$ROOT/scripts/build.sh" "$ROOT/build"

echo "== fsdp-opt examples/mlp.mlir --fsdp-autodiff (the derived training step, abridged)"
"$ROOT/build/bin/fsdp-opt" "$ROOT/examples/mlp.mlir" --fsdp-autodiff | grep -E "func.func|fsdp.update" | head -8

echo "== fsdpc examples/mlp.mlir --grid=1 -o build/mlp-trainer"
"$ROOT/build/bin/fsdpc" "$ROOT/examples/mlp.mlir" --grid=1 -o "$ROOT/build/mlp-trainer"

echo "== build/mlp-trainer --steps 200 --log-every 20"
"$ROOT/build/mlp-trainer" --steps 200 --log-every 20
