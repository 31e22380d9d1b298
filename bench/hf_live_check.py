#!/usr/bin/env python3
"""The live comparison with Hugging Face transformers (bench only: needs torch and
transformers, which the tests never do): a model directory imported, evaluated, trained,
exported, and the export loaded back by transformers.

    python3 bench/hf_live_check.py MODEL_DIR [--build build] [--work DIR] [--steps 3]
                                   [--batch 2] [--seq 16]

1. transformers' float32 loss on a random token batch, and our compiled evaluation step's
   on the same batch from fsdp-import-hf's model and weights: relative difference;
2. `--steps` steps of training on that batch, `--export`, fsdp-export-hf;
3. `from_pretrained` on the export: its loss on the batch against our evaluation of the
   trained parameters, and a few tokens generated greedily from it.
Prints one JSON object. Exit status 1 when a loss differs by more than 1e-5 relative.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "test", "reference"))
import datafile  # noqa: E402


def hf_loss(torch, model, tokens, targets):
    with torch.no_grad():
        logits = model(torch.tensor(tokens, dtype=torch.long)).logits.double()
    picked = torch.log_softmax(logits, -1).gather(
        -1, torch.tensor(targets, dtype=torch.long)[..., None])
    return -picked.mean().item()


def our_loss(trainer, weights, data, log):
    subprocess.run([trainer, "--steps", "0", "--init-from", weights, "--eval-data", data,
                    "--log-json", log], check=True, capture_output=True)
    with open(log) as f:
        return [json.loads(l)["eval_loss"] for l in f if "eval_loss" in l][-1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model_dir")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--work", default="")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--seq", type=int, default=16)
    args = ap.parse_args()
    import torch
    import transformers
    from transformers import AutoModelForCausalLM

    work = args.work or tempfile.mkdtemp(prefix="hf-live-")
    os.makedirs(work, exist_ok=True)
    path = lambda name: os.path.join(work, name)  # noqa: E731
    tool = lambda name: os.path.join(args.build, "bin", name)  # noqa: E731
    load = lambda d: AutoModelForCausalLM.from_pretrained(  # noqa: E731
        d, dtype=torch.float32, attn_implementation="eager").eval()
    reference = load(args.model_dir)
    rows = np.random.default_rng(0).integers(0, reference.config.vocab_size,
                                             (args.batch, args.seq + 1), dtype=np.int32)
    tokens, targets = rows[:, :-1], rows[:, 1:]
    datafile.write(path("batch.bin"), [("i32", tokens), ("i32", targets)])
    subprocess.run([tool("fsdp-import-hf"), args.model_dir, "--batch", str(args.batch),
                    "--seq", str(args.seq), "-o", path("model.mlir"), "--weights",
                    path("init.safetensors")], check=True)
    subprocess.run([tool("fsdpc"), path("model.mlir"), "-o", path("trainer")], check=True)
    theirs = hf_loss(torch, reference, tokens, targets)
    ours = our_loss(path("trainer"), path("init.safetensors"), path("batch.bin"),
                    path("eval.json"))
    subprocess.run([path("trainer"), "--steps", str(args.steps), "--init-from",
                    path("init.safetensors"), "--data", path("batch.bin"), "--export",
                    path("trained.safetensors")], check=True, capture_output=True)
    shutil.rmtree(path("export"), ignore_errors=True)
    subprocess.run([tool("fsdp-export-hf"), path("trained.safetensors"), "--config-from",
                    args.model_dir, "-o", path("export")], check=True)
    exported = load(path("export"))
    theirs_trained = hf_loss(torch, exported, tokens, targets)
    ours_trained = our_loss(path("trainer"), path("trained.safetensors"), path("batch.bin"),
                            path("eval-trained.json"))
    generated = exported.generate(torch.tensor(tokens[:1, :4], dtype=torch.long),
                                  max_new_tokens=5, do_sample=False)
    rel = lambda a, b: abs(a - b) / abs(b)  # noqa: E731
    result = {"model_dir": args.model_dir, "transformers": transformers.__version__,
              "torch": torch.__version__, "loss_hf": theirs, "loss_ours": ours,
              "rel": rel(ours, theirs), "trained_steps": args.steps,
              "trained_loss_hf_on_export": theirs_trained, "trained_loss_ours": ours_trained,
              "trained_rel": rel(ours_trained, theirs_trained),
              "generated": generated[0].tolist(), "work": work}
    print(json.dumps(result, indent=2))
    return 0 if result["rel"] <= 1e-5 and result["trained_rel"] <= 1e-5 else 1


if __name__ == "__main__":
    sys.exit(main())
