#!/usr/bin/env python3
"""The held-out evaluation step of examples/gpt.mlir (fsdp_eval_step, the forward pass
fsdpc compiles beside the training step), under mpirun:

    eval_check.py --fsdpc FSDPC --work DIR

Checks, each printed as a line ending in PASS:
  - reference: the held-out loss after 6 steps on 2 ranks is the NumPy float64 reference
    loss of the exported parameters on the same windows of the held-out file (the first
    --eval-batches whole batches, in file order), within teacher.LOSS_RTOL (each batch's
    loss is within it, and so is the mean of positive terms);
  - unperturbed: evaluating every 3 steps changes nothing in training: the losses, rates and
    exported parameters of the run without evaluation, bit for bit;
  - ranks: on 1 rank the held-out losses are the 2-rank ones up to the order of float sums;
  - micro-batches: a plan of 2 micro-batches evaluates its rows as 2 micro-batches, the
    same loss before training (within LOSS_RTOL of each other);
  - memory: every rank's arena high-water mark is the planned peak, the larger of the two
    steps' plans when both run, and the evaluation step's alone with --steps 0.
"""

import argparse
import os
import sys

# trainer_checks first: the reference pins NumPy's BLAS to one thread before NumPy
# loads, so that its float32 calibrations (bf16 bounds) are the same computation
# whatever the machine's core count, as in teacher.py run on its own.
from trainer_checks import (ROOT, Checks, fsdpc_command, mpi_environment, mpirun_command,
                            read_records, run, tokenize_docs)
import numpy as np  # noqa: E402
import models  # noqa: E402  (test/reference, put on the path by trainer_checks)
import teacher  # noqa: E402
from params_file import read_params  # noqa: E402

T, BATCH, EVAL_BATCHES = 32, 8, 5
checks = Checks()
check = checks.check


def train_log(path):
    return [(r["step"], r["loss"], r["lr"]) for r in read_records(path) if "step" in r]


def eval_log(path):
    return {r["eval_step"]: r["eval_loss"] for r in read_records(path) if "eval_step" in r}


def arena(path):
    return read_records(path)[-1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fsdpc", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    path = lambda name: os.path.join(a.work, name)  # noqa: E731
    local = lambda *c: run(list(map(str, c)), timeout=600)  # noqa: E731
    mpi = lambda *c: run(mpirun_command(2, *map(str, c)), env=mpi_environment(), timeout=600)  # noqa: E731

    tokenize_docs(a.work)
    train, val = path("train.bin"), path("val.bin")
    gpt = os.path.join(ROOT, "examples", "gpt.mlir")
    with open(gpt) as f:
        text = f.read()
    with open(path("gpt-micro.mlir"), "w") as f:
        f.write(text.replace("clip_grad_norm = 1.0>", "clip_grad_norm = 1.0, micro_batches = 2>", 1))
    for name, model, grid in [("gpt1", gpt, 1), ("gpt2", gpt, 2), ("micro2", path("gpt-micro.mlir"), 2)]:
        run([*fsdpc_command(a.fsdpc), model, f"--grid={grid}", "-o", path(name)])

    common = ["--steps", 6, "--data", train, "--seed", 4, "--lr", "3e-3", "--warmup-steps", 2]
    evals = ["--eval-data", val, "--eval-every", 3, "--eval-batches", EVAL_BATCHES]
    mpi(path("gpt2"), *common, *evals, "--log-json", path("two.jsonl"), "--export", path("two.safetensors"))
    mpi(path("gpt2"), *common, "--log-json", path("plain.jsonl"), "--export", path("plain.safetensors"))
    local(path("gpt1"), *common, *evals, "--log-json", path("one.jsonl"))

    # The reference on the held-out windows, from the exported parameters.
    params_table = models.MODELS["gpt"]["params"]
    flat = read_params(path("two.safetensors"), params_table)
    params, offset = {}, 0
    for item in params_table:
        name, shape = item[0], tuple(item[1])
        count = int(np.prod(shape))
        params[name] = flat[offset:offset + count].reshape(shape)
        offset += count
    tokens = np.fromfile(val, dtype="<u2").astype(np.int64)
    losses = []
    for b in range(EVAL_BATCHES):
        windows = np.stack([tokens[w * T:w * T + T + 1] for w in range(b * BATCH, (b + 1) * BATCH)])
        loss, _ = models.loss_and_grads("gpt", params, [windows[:, :T], windows[:, 1:]])
        losses.append(float(loss))
    want = float(np.mean(losses))
    got = eval_log(path("two.jsonl"))
    err = abs(got.get(6, float("nan")) - want) / want
    check("reference", sorted(got) == [3, 6] and err <= teacher.LOSS_RTOL,
          f"held-out loss at step 6 {got.get(6)} vs float64 {want:.9g} (rel.err {err:.1e} <= {teacher.LOSS_RTOL:.1e})")

    same = train_log(path("two.jsonl")) == train_log(path("plain.jsonl")) and \
        open(path("two.safetensors"), "rb").read() == open(path("plain.safetensors"), "rb").read()
    check("unperturbed", same, "training with and without evaluation " + ("equal" if same else "differ"))

    one = eval_log(path("one.jsonl"))
    close = sorted(one) == [3, 6] and all(abs(one[s] - got[s]) <= 2 * teacher.LOSS_RTOL * got[s] for s in one)
    check("ranks", close, f"1 rank {one}, 2 ranks {got}")

    mpi(path("micro2"), "--steps", 0, "--eval-data", val, "--eval-batches", EVAL_BATCHES, "--log-json", path("m.jsonl"))
    mpi(path("gpt2"), "--steps", 0, "--eval-data", val, "--eval-batches", EVAL_BATCHES, "--log-json", path("z.jsonl"))
    m, z = eval_log(path("m.jsonl"))[0], eval_log(path("z.jsonl"))[0]
    check("micro-batches", abs(m - z) <= 2 * teacher.LOSS_RTOL * z, f"{m} with 2 micro-batches, {z} without")

    marks = [arena(path(n)) for n in ("two.jsonl", "plain.jsonl", "z.jsonl")]
    exact = all(set(r["high_water_bytes"]) == {r["planned_peak_bytes"]} for r in marks)
    check("memory", exact and marks[0] == marks[1] and marks[2]["planned_peak_bytes"] < marks[0]["planned_peak_bytes"],
          f"planned = measured: train + eval {marks[0]['planned_peak_bytes']} B, "
          f"eval alone {marks[2]['planned_peak_bytes']} B")

    checks.finish("gpt evaluated")


if __name__ == "__main__":
    main()
