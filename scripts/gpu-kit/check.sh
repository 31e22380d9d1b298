#!/usr/bin/env bash
# The GPU check of this bundle, in one command: check.sh OUTDIR [--models A,B] [--deadline S]
# Writes OUTDIR/report.md, report.json and check.log; the last line printed is a summary.
# Exit status: 0 every check passed, 1 one failed, 2 no usable GPU (README.md).
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ "$#" -lt 1 ] || [ "${1#-}" != "$1" ]; then
  echo "usage: $0 OUTDIR [--models NAME,...] [--deadline SECONDS] [--work DIR]" >&2
  exit 64
fi
# The Python that has NumPy (the reference) and, on a GPU node, PyTorch (the bench).
PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c 'import numpy' 2>/dev/null; then
  echo "check.sh: $PYTHON cannot import numpy (set PYTHON=... to one that can)" >&2
  exit 1
fi
exec "$PYTHON" -u "$HERE/kit/check.py" "$@"
