#!/usr/bin/env bash
# Sets up a fresh machine, builds FSDP-MLIR, compiles examples/mlp.mlir into a native
# trainer with fsdpc for the example's plan (fully sharded over 2 ranks) and trains it
# under MPI for 200 steps on the built-in synthetic data.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Open MPI refuses to start as root unless told (setup.sh needs root anyway).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

"$ROOT/scripts/setup.sh"
"$ROOT/scripts/build.sh" "$ROOT/build"

echo "== fsdp-opt examples/mlp.mlir --fsdp-form-units --fsdp-partition --fsdp-autodiff" \
     "--fsdp-insert-collectives (the sharded training step's collectives, abridged)"
STEP="$("$ROOT/build/bin/fsdp-opt" "$ROOT/examples/mlp.mlir" --fsdp-form-units \
    --fsdp-partition --fsdp-autodiff --fsdp-insert-collectives)"
grep -E "all_gather|free|reduce_scatter|update" <<<"$STEP" | head -12

echo "== fsdpc examples/mlp.mlir -o build/mlp-trainer"
"$ROOT/build/bin/fsdpc" "$ROOT/examples/mlp.mlir" -o "$ROOT/build/mlp-trainer"

echo "== mpirun -np 2 build/mlp-trainer --steps 200 --log-every 20"
mpirun -np 2 "$ROOT/build/mlp-trainer" --steps 200 --log-every 20
