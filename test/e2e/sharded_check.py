#!/usr/bin/env python3
"""Trains an example sharded over N ranks (mpirun) for each strategy, and compares
every step's loss and the final parameters with the same example trained in one
process and with the independent NumPy float64 reference (test/reference), on one
data file.

    sharded_check.py --fsdpc FSDPC --model mlp|gpt --work DIR [--steps 20]
                     [--cases CASE[,CASE...]] [--data-seed S] [--jobs J]

A case is STRATEGY:N (full_shard, shard_grad_op or no_shard on a grid [N]) or
hybrid_shard:RxS (grid [R, S] on R*S ranks); by default every strategy with N = 1, 2
and 4, and hybrid_shard:2x2. The strategy is set by editing the plan of a copy of
examples/<model>.mlir, the grid with fsdpc --grid. For each case:

  - the loss of every step is within LOSS_RTOL_RANKS (relative) of the 1-rank trainer's
    and within reference_check.LOSS_RTOL of the reference's;
  - each parameter of --dump-params (the full parameters gathered from the shards) is
    within PARAM_RTOL_RANKS (relative L2) of the 1-rank dump, and within
    reference_check.PARAM_RTOL of the reference's;
  - the arena record (last line of --log-json) has a high-water mark for every rank,
    each equal to the planned peak.

Prints one line per case (worst errors, PASS or FAIL), then a summary; exits with 1 and
the list of failures if any check fails.
"""

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from reference_check import LOSS_RTOL, PARAM_RTOL, REFERENCE, ROOT, run  # noqa: E402

# Sharded against one process, both float32: only the order of the sums differs.
LOSS_RTOL_RANKS = 1e-5
PARAM_RTOL_RANKS = 1e-5
STRATEGIES = ["full_shard", "shard_grad_op", "no_shard"]
DEFAULT_CASES = [f"{s}:{n}" for s in STRATEGIES for n in (1, 2, 4)] + ["hybrid_shard:2x2"]
MPI_TIMEOUT = 300


def parse_case(text):
    """'full_shard:2' -> ('full_shard', [2]); 'hybrid_shard:2x2' -> ('hybrid_shard', [2, 2])."""
    match = re.fullmatch(r"(\w+):(\d+(?:x\d+)?)", text)
    if not match:
        sys.exit(f"sharded_check.py: bad case '{text}': expected STRATEGY:N or STRATEGY:RxS")
    return match.group(1), [int(d) for d in match.group(2).split("x")]


def with_strategy(text, strategy, grid):
    """The model text with `strategy = X` in its #fsdp.plan<...>, and a 2-D grid (the plan
    of hybrid_shard must have one; fsdpc --grid then sets the same)."""
    if len(grid) == 2:
        text = re.sub(r"grid\s*=\s*\[[^\]]*\]", f"grid = [{grid[0]}, {grid[1]}]", text, count=1)
    text, count = re.subn(r"strategy\s*=\s*\w+", f"strategy = {strategy}", text, count=1)
    if count == 0:
        text, count = re.subn(r"#fsdp\.plan<", f"#fsdp.plan<strategy = {strategy}, ", text,
                              count=1)
    if count == 0:
        sys.exit("sharded_check.py: the model has no #fsdp.plan<...>")
    return text


def mpirun_command(ranks, *command):
    mpirun = shutil.which("mpirun") or shutil.which("mpiexec")
    if not mpirun:
        sys.exit("sharded_check.py: mpirun not found on PATH")
    return [mpirun, "--oversubscribe", "-np", str(ranks), *command]


def mpi_environment():
    env = dict(os.environ)
    # Open MPI refuses to start as root unless told (CI runs as root).
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return env


def read_log(path):
    """(losses of the step records, the arena record or None)."""
    with open(path) as f:
        records = [json.loads(line) for line in f if line.strip()]
    losses = [r["loss"] for r in records if "step" in r]
    arena = records[-1] if records and "planned_peak_bytes" in records[-1] else None
    return losses, arena


def read_params(path, manifest):
    """{name: float64 array} of a --dump-params file, cut by the manifest's params."""
    values = np.fromfile(path, dtype=np.float32).astype(np.float64)
    params, start = {}, 0
    for param in manifest["params"]:
        if param["dtype"] != "f32":
            sys.exit(f"sharded_check.py: parameter {param['name']} is {param['dtype']}, "
                     "only f32 dumps are compared")
        count = int(np.prod(param["shape"]))
        params[param["name"]] = values[start:start + count]
        start += count
    if start != values.size:
        return None
    return params


def relative_l2(got, want):
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


def compare_losses(losses, want, tolerance, what):
    """(worst relative error, failure message or None) of each step's loss against `want`:
    the steps over `tolerance`, the first and the worst of them."""
    errors = [(abs(got - w) / abs(w), step, got, w)
              for step, (got, w) in enumerate(zip(losses, want), start=1)]
    worst = max(errors, default=(float("inf"),))[0]
    over = [e for e in errors if e[0] > tolerance]
    if not over:
        return worst, None
    describe = lambda e: f"step {e[1]} {e[2]:.7f} vs {e[3]:.7f} (rel.err {e[0]:.1e})"
    return worst, (f"loss vs {what}: {len(over)} of {len(errors)} steps over {tolerance:.0e}; "
                   f"first {describe(over[0])}, worst {describe(max(over))}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fsdpc", required=True)
    parser.add_argument("--model", choices=["mlp", "gpt"], required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--cases", default=",".join(DEFAULT_CASES))
    parser.add_argument("--data-seed", type=int, default=11,
                        help="make_data.py --seed (11, as reference_check.py)")
    parser.add_argument("--jobs", type=int, default=2, help="parallel compiles")
    args = parser.parse_args()
    cases = [parse_case(c) for c in args.cases.split(",")]
    os.makedirs(args.work, exist_ok=True)
    path = lambda name: os.path.join(args.work, name)
    started = time.time()

    # The models: the example itself (the 1-rank baseline) and one copy per case; a copy
    # identical to the baseline (the example's own strategy on 1 rank) reuses its trainer.
    example = os.path.join(ROOT, "examples", f"{args.model}.mlir")
    with open(example) as f:
        text = f.read()

    def name(strategy, grid):
        return f"{strategy}-{'x'.join(map(str, grid))}"

    jobs = {(text, (1,)): (example, path("trainer-1"))}
    trainers = {}
    for strategy, grid in cases:
        copy = with_strategy(text, strategy, grid)
        if (copy, tuple(grid)) not in jobs:
            source = path(f"{args.model}-{name(strategy, grid)}.mlir")
            with open(source, "w") as f:
                f.write(copy)
            jobs[(copy, tuple(grid))] = (source, path("trainer-" + name(strategy, grid)))
        trainers[name(strategy, grid)] = jobs[(copy, tuple(grid))][1]

    def compile_one(item):
        (_, grid), (source, trainer) = item
        run([args.fsdpc, source, "--grid=" + ",".join(map(str, grid)), "-o", trainer])

    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        list(pool.map(compile_one, jobs.items()))
    manifest = json.loads(run([path("trainer-1"), "--print-manifest"]).stdout)

    python = sys.executable
    data = path("data.bin")
    run([python, os.path.join(REFERENCE, "make_data.py"), "--model", args.model,
         "--samples", "256", "--seed", str(args.data_seed), "--out", data])
    train = ["--steps", str(args.steps), "--data", data]
    run([path("trainer-1"), *train, "--log-json", path("log-1.json"),
         "--dump-params", path("params-1.bin")])
    run([python, os.path.join(REFERENCE, "train.py"), "--model", args.model, "--data", data,
         "--steps", str(args.steps), "--seed", "0", "--out", path("reference.json"),
         "--dump-params", path("reference-params.bin")])

    base_losses, _ = read_log(path("log-1.json"))
    with open(path("reference.json")) as f:
        ref_losses = json.load(f)["losses"]
    base_params = read_params(path("params-1.bin"), manifest)
    ref_params = read_params(path("reference-params.bin"), manifest)
    failures = []
    if len(base_losses) != args.steps or len(ref_losses) != args.steps:
        failures.append(f"1 rank / reference: expected {args.steps} losses, got "
                        f"{len(base_losses)} and {len(ref_losses)}")
    if base_params is None or ref_params is None:
        failures.append("1 rank / reference: the parameter dumps do not match the manifest")
    if failures:
        sys.exit("FAILED:\n" + "\n".join(failures))
    worst, _ = compare_losses(base_losses, ref_losses, LOSS_RTOL, "reference")
    print(f"baseline: 1 rank (--grid=1) vs reference: worst loss rel.err {worst:.1e}")

    print(f"{'case':<22} {'loss vs 1 rank':>14} {'vs reference':>12} "
          f"{'params vs 1 rank':>16} {'vs reference':>12}  arena")
    for strategy, grid in cases:
        ranks = int(np.prod(grid))
        label = f"{strategy} N={ranks}" + (f" ({'x'.join(map(str, grid))})" if len(grid) > 1
                                           else "")
        tag = name(strategy, grid)
        log, dump = path(f"log-{tag}.json"), path(f"params-{tag}.bin")
        for stale in (log, dump):
            if os.path.exists(stale):
                os.remove(stale)
        command = mpirun_command(ranks, trainers[tag], *train, "--log-json", log,
                                 "--dump-params", dump)
        result = subprocess.run(command, capture_output=True, text=True, timeout=MPI_TIMEOUT,
                                env=mpi_environment())
        case_failures = []
        if result.returncode != 0:
            failures.append(f"{label}: {' '.join(command)} exited with {result.returncode}\n"
                            f"{result.stdout}\n{result.stderr}")
            print(f"{label:<22} FAIL (exit status {result.returncode})")
            continue

        losses, arena = read_log(log)
        if len(losses) != args.steps:
            case_failures.append(f"{args.steps} losses expected, {len(losses)} logged")
        worst_base, failure = compare_losses(losses, base_losses, LOSS_RTOL_RANKS, "1 rank")
        case_failures += [failure] if failure else []
        worst_ref, failure = compare_losses(losses, ref_losses, LOSS_RTOL, "reference")
        case_failures += [failure] if failure else []

        params = read_params(dump, manifest)
        worst_pbase = worst_pref = float("inf")
        if params is None:
            case_failures.append("--dump-params does not have the manifest's parameters")
        else:
            base_errors = {n: relative_l2(params[n], base_params[n]) for n in params}
            ref_errors = {n: relative_l2(params[n], ref_params[n]) for n in params}
            worst_pbase, worst_pref = max(base_errors.values()), max(ref_errors.values())
            for errors, tolerance, what in [(base_errors, PARAM_RTOL_RANKS, "1 rank"),
                                            (ref_errors, PARAM_RTOL, "reference")]:
                over = [f"{n} {e:.1e}" for n, e in errors.items() if e > tolerance]
                if over:
                    case_failures.append(f"parameters vs {what}: relative L2 error over "
                                         f"{tolerance:.0e}: {', '.join(over)}")

        if arena is None:
            case_failures.append("no arena record at the end of --log-json")
            arena_text = "missing"
        else:
            peak, marks = arena["planned_peak_bytes"], arena["high_water_bytes"]
            if len(marks) != ranks or any(m != peak for m in marks):
                case_failures.append(f"arena: planned peak {peak} bytes, high-water marks "
                                     f"{marks} (one per rank, each equal to the peak)")
            arena_text = f"{peak} B" + (" = high-water x" + str(len(marks))
                                        if all(m == peak for m in marks) else f" vs {marks}")

        verdict = "FAIL" if case_failures else "PASS"
        print(f"{label:<22} {worst_base:>14.1e} {worst_ref:>12.1e} {worst_pbase:>16.1e} "
              f"{worst_pref:>12.1e}  {arena_text}  {verdict}", flush=True)
        failures += [f"{label}: {f}" for f in case_failures]

    elapsed = time.time() - started
    if failures:
        sys.exit(f"FAILED ({len(failures)} checks, {elapsed:.0f} s):\n" + "\n".join(failures))
    print(f"PASS: {args.model}, {len(cases)} sharded runs of {args.steps} steps match 1 rank "
          f"and the float64 reference ({elapsed:.0f} s)")


if __name__ == "__main__":
    main()
