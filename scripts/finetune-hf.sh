#!/usr/bin/env bash
# Fine-tunes a Hugging Face model on real English text, end to end: fsdp-import-hf (the
# model file and its weights), fsdpc for 2 ranks, training under mpirun on the King James
# Bible (Debian's bible-kjv, the text of scripts/train-text.sh) from the imported weights
# with the held-out loss before and after, a checkpoint, fsdp-export-hf of it, and, when
# transformers is installed, the export loaded with from_pretrained and a few tokens
# generated. The text is tokenized with the model's own tokenizer when transformers can
# load one from MODEL_DIR, else as bytes (a vocabulary of at least 256). Exits 1 unless
# the held-out loss after training is below the one before.
#
#   scripts/finetune-hf.sh MODEL_DIR [STEPS]   (default 200; WORK=DIR, SEQ=256, BATCH=8,
#                                              LR=1e-4, PARAM_DTYPE=f32 to choose)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MODEL="${1:?usage: scripts/finetune-hf.sh MODEL_DIR [STEPS]}"
STEPS="${2:-200}"
SEQ="${SEQ:-256}" BATCH="${BATCH:-8}" LR="${LR:-1e-4}" PARAM_DTYPE="${PARAM_DTYPE:-f32}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if [ -z "${FSDP_BUILD_DIR:-}" ]; then
  "$ROOT/scripts/setup.sh"
  "$ROOT/scripts/build.sh" "$ROOT/build"
fi
BUILD="${FSDP_BUILD_DIR:-$ROOT/build}"
WORK="${WORK:-$BUILD/finetune-hf}"
mkdir -p "$WORK"

echo "== the King James Bible as text"
bible -f Gen1:1-Rev22:21 </dev/null | sed -E 's/^[1-9]?[A-Za-z]+[0-9]+:[0-9]+ //' >"$WORK/kjv.txt"
TOKENIZER=bytes
if { [ -e "$MODEL/tokenizer.json" ] || [ -e "$MODEL/tokenizer.model" ]; } &&
  python3 -c "import transformers" 2>/dev/null; then
  TOKENIZER=hf
fi
echo "== scripts/tokenize_text.py --tokenizer $TOKENIZER, 5% held out"
python3 "$ROOT/scripts/tokenize_text.py" "$WORK/kjv.txt" --out-dir "$WORK" --val-fraction 0.05 \
  --tokenizer "$TOKENIZER" --hf-model "$MODEL"

echo "== fsdp-import-hf $MODEL --batch $BATCH --seq $SEQ --grid 2"
"$BUILD/bin/fsdp-import-hf" "$MODEL" --batch "$BATCH" --seq "$SEQ" --grid 2 \
  --param-dtype "$PARAM_DTYPE" --lr "$LR" -o "$WORK/model.mlir" --weights "$WORK/init.safetensors"
"$BUILD/bin/fsdpc" "$WORK/model.mlir" -o "$WORK/trainer"

echo "== the held-out loss of the imported weights"
mpirun --oversubscribe -np 2 "$WORK/trainer" --steps 0 --init-from "$WORK/init.safetensors" \
  --eval-data "$WORK/val.bin" --eval-batches 20 --log-json "$WORK/before.jsonl"
echo "== mpirun -np 2 trainer --steps $STEPS --init-from ... --data train.bin"
rm -rf "$WORK/ckpt"
mpirun --oversubscribe -np 2 "$WORK/trainer" --steps "$STEPS" --init-from "$WORK/init.safetensors" \
  --data "$WORK/train.bin" --eval-data "$WORK/val.bin" --eval-batches 20 \
  --warmup-steps $(( STEPS / 10 )) --lr-decay cosine --log-every 50 \
  --save "$WORK/ckpt" --log-json "$WORK/after.jsonl"

echo "== fsdp-export-hf $WORK/ckpt -> $WORK/hf"
rm -rf "$WORK/hf"
"$BUILD/bin/fsdp-export-hf" "$WORK/ckpt" --config-from "$MODEL" -o "$WORK/hf"

python3 - "$WORK" <<'PY'
import json, sys
work = sys.argv[1]
def held_out(name):
    with open(f"{work}/{name}") as f:
        return [r for r in map(json.loads, f) if "eval_loss" in r][-1]["eval_loss"]
before, after = held_out("before.jsonl"), held_out("after.jsonl")
print(f"held-out loss {before:.4f} before fine-tuning, {after:.4f} after")
try:
    import torch
    from transformers import AutoModelForCausalLM
except ImportError:
    print("transformers not installed: the export was not loaded back")
else:
    model = AutoModelForCausalLM.from_pretrained(f"{work}/hf", dtype=torch.float32).eval()
    with open(f"{work}/val.bin", "rb") as f:
        import numpy as np
        dtype = "<u2" if model.config.vocab_size <= 1 << 16 else "<u4"
        prompt = np.frombuffer(f.read(64), dtype=dtype)[:16].astype(np.int64)
    out = model.generate(torch.tensor(prompt)[None], max_new_tokens=16, do_sample=False)
    print(f"from_pretrained({work}/hf) generated: {out[0, 16:].tolist()}")
sys.exit(0 if after < before else 1)
PY
