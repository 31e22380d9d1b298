#!/usr/bin/env python3
"""Checks the CUDA target's kernels without a GPU: each model is compiled twice,
for the CPU target and for the CUDA target with its kernels run as CPU loops over
block and thread ids (fsdpc --target=cuda --test-kernels-on-cpu, for several block
sizes), both trained on the same data on 2 ranks (mpirun), and every step's loss and
the final parameters are compared.

    kernels_on_cpu_check.py --fsdpc FSDPC --work DIR --model FILE [--model FILE ...]
                            [--block-sizes 256,32] [--steps 10]

The kernel trainer runs the CUDA target's host program (its events, its reads of the
loss through the runtime) and its kernels (the mapping of every linalg op to blocks
and threads, the guards of partial blocks, the index arithmetic) with the CPU
runtime's collectives and BLAS. Prints a line per model and block size, then PASS or
FAIL; exits with 1 on any failure.
"""

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "reference"))
from params_file import manifest_params, read_params  # noqa: E402

# The kernels sum as a GPU does: a block's threads each fold a strided slice,
# then combine in a tree (gpu.all_reduce), where the CPU target adds in order.
# In f32 the reassociation moves a sum of n terms by at most about n * 2^-24
# of the sum of magnitudes (n <= 256 per thread here): the losses and
# parameters of 10 steps stay within 1e-6.
LOSS_RTOL = 1e-6
PARAM_RTOL = 1e-6
# A plan in bf16 stores values rounded to bf16 (2^-8 relative): a value whose
# f32 sum moved across a rounding boundary is stored one bf16 ulp apart. Such
# values are rare (the f32 difference is ~2^-16 of a bf16 ulp's 2^-8, so about
# one value in 2^8 is near enough to a boundary), and a loss or parameter
# vector over all of them moves by a small fraction of an ulp: within 2^-11.
BF16_RTOL = 2.0 ** -11
RANKS = 2
MPI_TIMEOUT = 300


def mpi_environment():
    env = dict(os.environ)
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_mpi_yield_when_idle="1")
    return env


def run(command, **kwargs):
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        sys.exit(f"kernels_on_cpu_check.py: {' '.join(command)} failed "
                 f"({result.returncode}):\n{result.stdout}{result.stderr}")
    return result


def train(trainer, work, steps):
    """Every step's loss and the final parameters (float32, flat in manifest order) of a
    2-rank run."""
    log, dump = trainer + ".log.json", trainer + ".safetensors"
    mpirun = shutil.which("mpirun") or shutil.which("mpiexec")
    if not mpirun:
        sys.exit("kernels_on_cpu_check.py: mpirun not found on PATH")
    run([mpirun, "--oversubscribe", "-np", str(RANKS), trainer, "--steps", str(steps),
         "--seed", "5", "--log-every", str(steps), "--log-json", log, "--export", dump],
        env=mpi_environment(), timeout=MPI_TIMEOUT, cwd=work)
    with open(log) as f:
        losses = [json.loads(line)["loss"] for line in f if '"loss"' in line]
    try:
        params = read_params(dump, manifest_params(trainer), dtype=np.float32)
    except (ValueError, RuntimeError) as e:
        sys.exit(f"kernels_on_cpu_check.py: --export: {e}")
    return np.array(losses, dtype=np.float64), params


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fsdpc", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--model", action="append", required=True)
    parser.add_argument("--block-sizes", default="256,32")
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)

    failures = []
    for model in args.model:
        name = os.path.splitext(os.path.basename(model))[0]
        with open(model) as f:
            bf16 = "param_dtype = bf16" in f.read()
        loss_rtol = BF16_RTOL if bf16 else LOSS_RTOL
        param_rtol = BF16_RTOL if bf16 else PARAM_RTOL
        cpu = os.path.join(args.work, f"{name}-cpu")
        run([*shlex.split(args.fsdpc), model, f"--grid={RANKS}", "-o", cpu])
        cpu_losses, cpu_params = train(cpu, args.work, args.steps)
        for block in args.block_sizes.split(","):
            kernels = os.path.join(args.work, f"{name}-kernels-{block}")
            run([*shlex.split(args.fsdpc), model, f"--grid={RANKS}", "--target=cuda",
                 "--test-kernels-on-cpu", f"--gpu-block-size={block}", "-o", kernels])
            losses, params = train(kernels, args.work, args.steps)
            loss_error = float(np.max(np.abs(losses - cpu_losses) / np.abs(cpu_losses)))
            param_error = float(np.linalg.norm(params - cpu_params) /
                                np.linalg.norm(cpu_params))
            ok = (len(losses) == args.steps and len(losses) == len(cpu_losses) and
                  params.shape == cpu_params.shape and loss_error <= loss_rtol and
                  param_error <= param_rtol)
            verdict = "PASS" if ok else "FAIL"
            print(f"{name} block {block}: {len(losses)} steps, loss rel err {loss_error:.2e}, "
                  f"params rel L2 err {param_error:.2e}: {verdict}")
            if not ok:
                failures.append(f"{name} block {block}")
    if failures:
        print("FAIL: " + ", ".join(failures))
        sys.exit(1)
    print(f"PASS: {len(args.model)} models, the CUDA target's kernels on the CPU match the "
          f"CPU target")


if __name__ == "__main__":
    main()
