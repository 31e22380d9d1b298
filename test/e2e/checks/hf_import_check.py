#!/usr/bin/env python3
"""Hugging Face fixtures imported, compiled and evaluated: our loss against theirs.

    hf_import_check.py --fsdpc FSDPC --import-hf FSDP_IMPORT_HF --work DIR
                       [--fixtures NAME,...] [--ranks 1,2]

Each fixture (test/e2e/Inputs/hf/<name>/, written once by
test/reference/make_hf_fixtures.py with transformers) holds a tiny checkpoint, a token
batch (batch.npz: input_ids and targets [2, 16]) and Hugging Face's float32 loss on it
(expected.json). For each fixture and rank count N: fsdp-import-hf writes the model (grid
[N]) and its weights, fsdpc compiles it, and the trainer evaluates the batch from those
weights (`--steps 0 --init-from ... --eval-data ...`). Its loss must be within 1e-5
relative of Hugging Face's: both are float32 forwards of the same function, whose
roundoff in the loss is some 1e-7 at these sizes (the longest chain, 2 layers of width 64
and a vocabulary of 256, sums a few hundred terms: gamma(300) u ~ 2e-5 at worst, 1e-7 in
practice); a weight left out, a bias dropped, a rotation or scaling wrong moves it by
1e-3 or more.
"""
import argparse
import json
import os

import numpy as np

from trainer_checks import (Checks, datafile, fsdpc_command, import_and_compile, models,
                            read_records, run_trainer)

FIXTURES = models.HF_FIXTURES
RTOL = 1e-5


def evaluate(args, name, ranks):
    """(our loss, Hugging Face's) of fixture `name` (a folder of FIXTURES, or a path) on
    `ranks` ranks."""
    fixture = name if os.sep in name else os.path.join(FIXTURES, name)
    work = os.path.join(args.work, f"{os.path.basename(name)}-{ranks}")
    os.makedirs(work, exist_ok=True)
    batch = np.load(os.path.join(fixture, "batch.npz"))
    tokens, targets = batch["input_ids"], batch["targets"]
    trainer, weights = import_and_compile(args.import_hf, fsdpc_command(args.fsdpc), fixture,
                                          *tokens.shape, ranks, work)
    data = os.path.join(work, "batch.bin")
    datafile.write(data, [("i32", tokens), ("i32", targets)])
    log = os.path.join(work, "log.json")
    run_trainer(ranks, trainer, "--steps", "0", "--init-from", weights, "--eval-data", data,
                "--log-json", log)
    ours = [r["eval_loss"] for r in read_records(log) if "eval_loss" in r]
    with open(os.path.join(fixture, "expected.json")) as f:
        return ours[-1], json.load(f)["loss"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fsdpc", required=True)
    ap.add_argument("--import-hf", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--fixtures", default="", help="names of folders of " + FIXTURES +
                    " or paths (default: every folder of it)")
    ap.add_argument("--ranks", default="1,2")
    args = ap.parse_args()
    args.import_hf = fsdpc_command(args.import_hf)
    names = (args.fixtures.split(",") if args.fixtures
             else sorted(n for n in os.listdir(FIXTURES)
                         if os.path.isdir(os.path.join(FIXTURES, n))))
    checks = Checks()
    for name in names:
        for ranks in (int(n) for n in args.ranks.split(",")):
            ours, theirs = evaluate(args, name, ranks)
            error = abs(ours - theirs) / abs(theirs)
            checks.check(f"{os.path.basename(name)} N={ranks}", error <= RTOL,
                         f"loss {ours:.9f}, Hugging Face {theirs:.9f}, rel. error {error:.1e}")
    checks.finish(f"{len(names)} Hugging Face models match their loss within {RTOL:g}")


if __name__ == "__main__":
    main()
