#!/usr/bin/env python3
"""Trains an example with the compiled trainer and with the independent NumPy
float64 reference (test/reference) on the same data, and compares the loss of
every step and the final parameters.

    reference_check.py --fsdpc FSDPC --model mlp|gpt --work DIR [--steps 20]
"""

import argparse
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
REFERENCE = os.path.join(ROOT, "test", "reference")

# fp32 against float64: losses agree to 1e-4 relative (the bound).
# AdamW divides by sqrt(v): elements whose gradient is nearly zero can move by
# up to lr in opposite directions, so parameters are compared as a whole
# (relative L2 error) per tensor.
LOSS_RTOL = 1e-4
PARAM_RTOL = 5e-3


def run(command, **kwargs):
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        sys.exit(f"FAILED: {' '.join(command)}\n{result.stdout}\n{result.stderr}")
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fsdpc", required=True)
    parser.add_argument("--model", choices=["mlp", "gpt"], required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    path = lambda name: os.path.join(args.work, name)

    # One process: the example's plan is for 2 ranks.
    trainer = path("trainer")
    run([args.fsdpc, os.path.join(ROOT, "examples", f"{args.model}.mlir"), "--grid=1",
         "-o", trainer])
    manifest = json.loads(run([trainer, "--print-manifest"]).stdout)

    python = sys.executable
    run([python, os.path.join(REFERENCE, "make_data.py"), "--model", args.model,
         "--samples", "256", "--seed", "11", "--out", path("data.bin")])
    run([trainer, "--steps", str(args.steps), "--data", path("data.bin"), "--log-json",
         path("log.json"), "--dump-params", path("params.bin")])
    run([python, os.path.join(REFERENCE, "train.py"), "--model", args.model, "--data",
         path("data.bin"), "--steps", str(args.steps), "--seed", "0", "--out",
         path("reference.json"), "--dump-params", path("reference-params.bin")])

    with open(path("log.json")) as f:
        losses = [r["loss"] for r in map(json.loads, f) if "step" in r]
    with open(path("reference.json")) as f:
        reference = json.load(f)["losses"]
    failures = []
    if len(losses) != args.steps or len(reference) != args.steps:
        failures.append(f"expected {args.steps} losses, got {len(losses)} and {len(reference)}")
    for step, (got, want) in enumerate(zip(losses, reference), start=1):
        error = abs(got - want) / abs(want)
        print(f"step {step:3d}  trainer {got:.7f}  reference {want:.7f}  rel.err {error:.1e}")
        if error > LOSS_RTOL:
            failures.append(f"step {step}: loss {got} vs reference {want}")

    params = np.fromfile(path("params.bin"), dtype=np.float32).astype(np.float64)
    expected = np.fromfile(path("reference-params.bin"), dtype=np.float32).astype(np.float64)
    if params.size != expected.size:
        failures.append(f"{params.size} parameter values, reference has {expected.size}")
    else:
        start = 0
        for param in manifest["params"]:
            count = int(np.prod(param["shape"]))
            got, want = params[start:start + count], expected[start:start + count]
            start += count
            error = np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30)
            print(f"param {param['name']:<16} rel.L2.err {error:.1e}")
            if error > PARAM_RTOL:
                failures.append(f"parameter {param['name']}: relative L2 error {error:.2e}")
    if failures:
        sys.exit("FAILED:\n" + "\n".join(failures))
    print(f"PASS: {args.model}, {args.steps} steps match the float64 reference")


if __name__ == "__main__":
    main()
