#!/usr/bin/env python3
"""Activation recompute (fsdp-remat) changes memory, never values: trains an example
with and without the plan's remat, sharded with each given strategy, and checks that

  - every step's state (--trace-state: parameters, gradients, optimizer state) and every
    loss are equal bit for bit to the run without recompute (the copies are the same ops
    on the same operands, and each product of a shape takes the same GEMM kernel);
  - each run's arena record has a high-water mark for every rank equal to its planned
    peak, and that peak is what `fsdpc --report=json` plans;
  - with --expect-smaller, the planned peak with recompute is below the one without
    (for some units only: not above); the report counts the recomputed ops.

    remat_check.py --fsdpc FSDPC --model mlp|gpt --work DIR [--steps 3]
                   [--cases STRATEGY:N[,...]] [--remat "unit" [--remat "selective" ...]]
                   [--dtypes "param_dtype = bf16, "] [--expect-smaller]

A --remat value is what goes into the plan after `remat = `, e.g. "unit" or
"unit, remat_every = 2" or 'selective, remat_units = ["block1"]'. Prints one line per
case and remat (planned peak, ops recomputed, PASS or FAIL); exits with 1 and the list
of failures if any check fails.
"""

import argparse
import json
import os
import re
import subprocess
import sys

from sharded_check import MPI_TIMEOUT, parse_case, with_strategy
from trainer_checks import (ROOT, fsdpc_command, make_data, mpi_environment, mpirun_command,
                            read_log, run)


def train(args, trainer, ranks, data, tag):
    """Runs a trainer: (losses, arena record, trace bytes, failures)."""
    log, trace = (os.path.join(args.work, f"{kind}-{tag}") for kind in ("log.json", "trace.bin"))
    for stale in (log, trace):
        if os.path.exists(stale):
            os.remove(stale)
    command = mpirun_command(ranks, trainer, "--steps", str(args.steps), "--data", data,
                             "--log-json", log, "--trace-state", trace)
    result = subprocess.run(command, capture_output=True, text=True, timeout=MPI_TIMEOUT,
                            env=mpi_environment())
    if result.returncode != 0:
        return None, None, None, [f"{' '.join(command)} exited with {result.returncode}\n"
                                  f"{result.stdout}\n{result.stderr}"]
    losses, arena = read_log(log)
    with open(trace, "rb") as f:
        state = f.read()
    os.remove(trace)
    failures = []
    if arena is None:
        failures.append(f"{tag}: no arena record at the end of --log-json")
    elif (len(arena["high_water_bytes"]) != ranks
          or any(m != arena["planned_peak_bytes"] for m in arena["high_water_bytes"])):
        failures.append(f"{tag}: planned peak {arena['planned_peak_bytes']} bytes, high-water "
                        f"marks {arena['high_water_bytes']} (one per rank, each equal)")
    return losses, arena, state, failures


def compile_case(args, text, grid, tag):
    """(trainer path, fsdpc --report=json's per-rank arena plan)."""
    model = os.path.join(args.work, f"model-{tag}.mlir")
    trainer = os.path.join(args.work, f"trainer-{tag}")
    with open(model, "w") as f:
        f.write(text)
    grid_flag = "--grid=" + ",".join(map(str, grid))
    run(fsdpc_command(args.fsdpc) + [model, grid_flag, "-o", trainer])
    report = run(fsdpc_command(args.fsdpc) + [model, grid_flag, "--report=json"])
    return trainer, json.loads(report.stdout)["per_rank_bytes"]["arena"]


def check_case(args, source, strategy, grid, data):
    """Lines to print and failures, for one strategy and grid and every --remat."""
    ranks = 1
    for size in grid:
        ranks *= size
    label = f"{strategy}:{'x'.join(map(str, grid))}"
    tag = re.sub(r"[^\w]+", "-", label)
    base_text = with_strategy(source, strategy, grid, args.dtypes)
    trainer, base_plan = compile_case(args, base_text, grid, f"{tag}-none")
    base_losses, base_arena, base_state, failures = train(args, trainer, ranks, data,
                                                          f"{tag}-none")
    if base_state is None:
        return [f"{label} remat = none: FAIL"], failures
    lines = [f"{label} remat = none: planned {base_arena['planned_peak_bytes']} B"]
    for remat in args.remat:
        name = tag + "-" + re.sub(r"[^\w]+", "-", remat)
        text = with_strategy(source, strategy, grid, f"{args.dtypes}remat = {remat}, ")
        trainer, plan = compile_case(args, text, grid, name)
        losses, arena, state, problems = train(args, trainer, ranks, data, name)
        if state is not None:
            if losses != base_losses:
                problems.append(f"{name}: losses {losses} differ from {base_losses}")
            if state != base_state:
                problems.append(f"{name}: the traced state differs from the run without "
                                "recompute")
            peak = arena["planned_peak_bytes"] if arena else None
            if peak != plan["arena_bytes"]:
                problems.append(f"{name}: the trainer's planned peak {peak} is not the "
                                f"report's arena {plan['arena_bytes']}")
            # In a model whose units keep large internal activations (GPT), recomputing
            # every unit lowers the peak; recomputing some lowers it when the peak falls
            # on their memory, and never raises it.
            partial = "remat_every" in remat or "remat_units" in remat
            if args.expect_smaller and peak is not None and (
                    peak > base_arena["planned_peak_bytes"] or
                    not partial and peak == base_arena["planned_peak_bytes"]):
                problems.append(f"{name}: planned peak {peak} is not below "
                                f"{base_arena['planned_peak_bytes']} without recompute")
            recompute = plan.get("recompute") or {}
            if recompute.get("ops", 0) <= 0:
                problems.append(f"{name}: the report counts no recomputed op: {recompute}")
            saved = base_arena["planned_peak_bytes"] - (peak or 0)
            lines.append(f"{label} remat = {remat}: planned {peak} B (-{saved} B), "
                         f"{recompute.get('ops')} ops recomputed, "
                         f"{recompute.get('product_flops')} product FLOPs: "
                         f"{'FAIL' if problems else 'PASS'}")
        else:
            lines.append(f"{label} remat = {remat}: FAIL")
        failures += problems
    return lines, failures


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fsdpc", required=True)
    parser.add_argument("--model", choices=["mlp", "gpt"], required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--cases", default="full_shard:1,full_shard:2")
    parser.add_argument("--remat", action="append", default=None)
    parser.add_argument("--dtypes", default="", help='e.g. "param_dtype = bf16, "')
    parser.add_argument("--data-seed", type=int, default=5)
    parser.add_argument("--expect-smaller", action="store_true",
                        help="check the planned peak falls (not for every model: the MLP "
                             "keeps each layer's output, and recomputing its pre-activation "
                             "adds a temporary)")
    args = parser.parse_args()
    args.remat = args.remat or ["unit", "selective"]
    os.makedirs(args.work, exist_ok=True)
    with open(os.path.join(ROOT, "examples", f"{args.model}.mlir")) as f:
        source = f.read()
    data = os.path.join(args.work, "data.bin")
    make_data(args.model, args.data_seed, data)

    failures = []
    for case in args.cases.split(","):
        strategy, grid, tensor, _ = parse_case(case)
        if tensor > 1:
            sys.exit(f"remat_check.py: case '{case}': tensor ranks are sharded_check.py's")
        lines, problems = check_case(args, source, strategy, grid, data)
        print("\n".join(lines), flush=True)
        failures += problems
    if failures:
        print("FAIL:\n" + "\n".join(failures))
        sys.exit(1)
    print(f"PASS: {args.model}, recompute equal to no recompute on {len(args.cases.split(','))} "
          "sharded runs")


if __name__ == "__main__":
    main()
