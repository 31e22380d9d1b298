#!/usr/bin/env bash
# Trains examples/gpt.mlir (a byte-level GPT: vocabulary 256, context 32, width 64) on real
# English text: the King James Bible (public domain), which Debian's bible-kjv package
# ships. Sets up and builds (unless FSDP_BUILD_DIR names a build), writes the text,
# tokenizes it (bytes as tokens, the last 5% held out), compiles the model for 2 ranks and
# trains it under mpirun with a warmup + cosine schedule, the held-out loss every 500
# steps, a checkpoint every 1000 and the final weights as safetensors. It ends by comparing
# the final held-out loss with the text's byte unigram entropy (what a model that ignores
# the context reaches) and exits 1 unless the loss is well below it (by a quarter).
#
#   scripts/train-text.sh [STEPS]        (default 3000; WORK=DIR to choose where)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STEPS="${1:-3000}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if [ -z "${FSDP_BUILD_DIR:-}" ]; then
  "$ROOT/scripts/setup.sh"
  "$ROOT/scripts/build.sh" "$ROOT/build"
fi
BUILD="${FSDP_BUILD_DIR:-$ROOT/build}"
WORK="${WORK:-$BUILD/text-example}"
mkdir -p "$WORK"

echo "== the King James Bible as text (bible -f Gen1:1-Rev22:21, verse numbers dropped)"
bible -f Gen1:1-Rev22:21 </dev/null | sed -E 's/^[1-9]?[A-Za-z]+[0-9]+:[0-9]+ //' >"$WORK/kjv.txt"
echo "== scripts/tokenize_text.py: bytes as tokens, 5% held out"
python3 "$ROOT/scripts/tokenize_text.py" "$WORK/kjv.txt" --out-dir "$WORK" --val-fraction 0.05

echo "== fsdpc examples/gpt.mlir --grid=2 -o $WORK/gpt"
"$BUILD/bin/fsdpc" "$ROOT/examples/gpt.mlir" --grid=2 -o "$WORK/gpt"

echo "== mpirun -np 2 gpt --steps $STEPS --data train.bin --eval-data val.bin ..."
rm -rf "$WORK/ckpt"
mpirun --oversubscribe -np 2 "$WORK/gpt" --steps "$STEPS" --data "$WORK/train.bin" \
  --eval-data "$WORK/val.bin" --eval-every 500 --eval-batches 50 \
  --lr 3e-3 --warmup-steps 100 --lr-decay cosine --min-lr 3e-4 --log-every 250 \
  --save "$WORK/ckpt" --save-every 1000 --keep 2 --log-json "$WORK/log.jsonl" \
  --export "$WORK/gpt.safetensors"

python3 - "$WORK" <<'PY'
import json, sys
import numpy as np
work = sys.argv[1]
tokens = np.fromfile(f"{work}/train.bin", dtype="<u2")
p = np.bincount(tokens, minlength=256) / len(tokens)
entropy = float(-(p[p > 0] * np.log(p[p > 0])).sum())
with open(f"{work}/log.jsonl") as f:
    evals = [r for r in map(json.loads, f) if "eval_step" in r]
final = evals[-1]["eval_loss"]
ok = final < 0.75 * entropy
print(f"held-out loss {final:.3f} nats after step {evals[-1]['eval_step']}, byte unigram entropy "
      f"{entropy:.3f} nats: {'well below' if ok else 'NOT well below'} it")
sys.exit(0 if ok else 1)
PY
