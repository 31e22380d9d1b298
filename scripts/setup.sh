#!/usr/bin/env bash
# Idempotent set-up of everything FSDP-MLIR needs on a fresh Debian (bookworm) machine.
# Safe to run repeatedly: apt-get skips what is already installed.
set -euo pipefail

LLVM_VERSION=22
PACKAGES=(
  cmake ninja-build g++ git
  "llvm-${LLVM_VERSION}-dev" "llvm-${LLVM_VERSION}-tools"
  "libmlir-${LLVM_VERSION}-dev" "mlir-${LLVM_VERSION}-tools"
  libopenmpi-dev openmpi-bin
  libopenblas-dev libdnnl-dev
  libgtest-dev nlohmann-json3-dev
  python3 python3-numpy
  # The King James Bible (public domain) as text, for scripts/train-text.sh.
  bible-kjv
)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "setup: all Debian packages present"
fi

# NumPy for the reference implementations in test/, for whichever python3 is first on PATH.
if ! python3 -c 'import numpy' 2>/dev/null; then
  python3 -m pip install --quiet numpy
fi
# The tests read and write the trainer's safetensors files with the reference
# implementation of the format (Debian 12 does not package it).
if ! python3 -c 'import safetensors' 2>/dev/null; then
  python3 -m pip install --quiet safetensors
fi
# Lizard measures every function's length for test/Style/function-length.test (pinned:
# another version may parse C++ differently).
if ! python3 -c 'import lizard, sys; sys.exit(lizard.version != "1.24.3")' 2>/dev/null; then
  python3 -m pip install --quiet lizard==1.24.3
fi
# lit drives the test suite; Debian ships it inside llvm-N-tools, PyPI has it otherwise.
if [ ! -x "/usr/lib/llvm-${LLVM_VERSION}/bin/lit" ] && ! python3 -c 'import lit' 2>/dev/null; then
  python3 -m pip install --quiet lit
fi

CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
have_nccl() {
  local d
  for d in "$CUDA_HOME/lib" "$CUDA_HOME/lib64" "$CUDA_HOME"/targets/*/lib /usr/lib/x86_64-linux-gnu; do
    [ -e "$d/libnccl.so" ] && return 0
  done
  return 1
}
if [ -x "$CUDA_HOME/bin/nvcc" ] && have_nccl; then
  echo "setup: CUDA toolkit and NCCL found under $CUDA_HOME: the CUDA target can be built"
  # The tests read the trainers' fat binaries with NVIDIA's cuobjdump, which this
  # toolkit lacks: PyPI has it.
  if ! command -v cuobjdump >/dev/null && [ ! -x "$CUDA_HOME/bin/cuobjdump" ] &&
     ! python3 -c 'import glob, sysconfig, sys; sys.exit(not glob.glob(sysconfig.get_paths()["purelib"] + "/nvidia/cu*/bin/cuobjdump"))'; then
    python3 -m pip install --quiet nvidia-cuda-cuobjdump
  fi
  # The runtime describes cuDNN's fused attention with the cudnn-frontend, a
  # header-only C++ library; its PyPI wheel carries the headers (site-packages/include).
  if ! python3 -c 'import os, sysconfig, sys; sys.exit(not os.path.exists(sysconfig.get_paths()["purelib"] + "/include/cudnn_frontend.h"))'; then
    python3 -m pip install --quiet nvidia-cudnn-frontend==1.32.0
  fi
else
  echo "setup: CUDA toolkit or NCCL not found under $CUDA_HOME: the CUDA target will be skipped"
fi
