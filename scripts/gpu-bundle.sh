#!/usr/bin/env bash
# Builds the GPU check kit: scripts/gpu-bundle.sh DIR [--models NAME,...] [--gpu-arch sm_90]
#
# One folder (at most 48 MiB) to copy to a GPU node that has the NVIDIA driver, the CUDA
# toolkit and Python with NumPy (PyTorch for the speed comparison), and nothing of ours;
# there `DIR/check.sh OUTDIR` proves the CUDA trainers in one command (docs/CUDA.md,
# section 5). The compiler comes from an existing build: FSDPC=path/to/fsdpc, or
# BUILD_DIR (default: build/) and its bin/fsdpc; run ./scripts/build.sh first.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ "$#" -lt 1 ] || [ "${1#-}" != "$1" ]; then
  echo "usage: $0 DIR [--models NAME,...] [--gpu-arch sm_90] [--max-mib 48]" >&2
  exit 64
fi
OUT="$1"
shift
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
FSDPC="${FSDPC:-$BUILD_DIR/bin/fsdpc}"
if [ ! -x "$FSDPC" ]; then
  echo "gpu-bundle: no fsdpc at $FSDPC (build first: ./scripts/build.sh; or set FSDPC= or BUILD_DIR=)" >&2
  exit 1
fi
exec python3 "$ROOT/scripts/gpu-kit/make_bundle.py" --fsdpc "$FSDPC" --out "$OUT" "$@"
