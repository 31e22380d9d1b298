#!/usr/bin/env python3
"""The textbook scenario (docs/CostModel.md, section 7): Llama-2-70B
(examples/llama-70b.mlir) on 8 and 16 H100 80 GB, as DDP, FSDP in f32, FSDP in
bf16 with recompute (the file's plan), and that with the optimizer offloaded to
the host. For each: the compiler's exact per-rank figures (fsdpc --report=json:
the sharded state, the planned arena, the host arena), the budget against 80 GB
with the runtime's memory, the predicted step and its exposed communication on
the h100-sxm profile, and, when it does not fit, the changes the fit search
proposes (fsdpc --device-memory=80GB). Nothing here runs on a GPU: every figure
is the compiler's.

    python3 bench/textbook_70b.py [--fsdpc build/bin/fsdpc] [--grids 8,16] [--no-fit]

Prints a Markdown table, then each over-budget scenario's fixes; writes the
reports to bench/out/textbook-70b.json.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.join(ROOT, "examples", "llama-70b.mlir")
BUDGET = 80e9
# The h100-sxm profile's runtime memory: CUDA context, NCCL, cuBLAS (docs/CostModel.md).
RUNTIME = (512 + 1024 + 64) * 2**20

# How each scenario rewrites the file's plan (grid 8, full_shard, bf16, remat = unit).
SCENARIOS = [
    ("DDP, f32", [(r"strategy = full_shard", "strategy = no_shard"),
                  (r", param_dtype = bf16", ""), (r", remat = unit", "")]),
    ("FSDP, f32", [(r", param_dtype = bf16", ""), (r", remat = unit", "")]),
    ("FSDP, bf16 + recompute", []),
    ("FSDP, bf16 + recompute + offload", [(r"remat = unit>", "remat = unit, offload = optimizer>")]),
]


def plan_text(edits):
    with open(MODEL) as f:
        text = f.read()
    for pattern, replacement in edits:
        text, count = re.subn(pattern, replacement, text, count=1)
        if count != 1:
            sys.exit(f"textbook_70b.py: the model's plan no longer has '{pattern}'")
    return text


def gib(nbytes):
    return f"{nbytes / 2**30:,.1f} GiB"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fsdpc", default=os.path.join(ROOT, "build/bin/fsdpc"))
    parser.add_argument("--grids", default="8,16")
    parser.add_argument("--no-fit", action="store_true", help="skip the fit searches")
    parser.add_argument("--work", default=os.path.join(ROOT, "bench/out/textbook-70b"))
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    rows, fixes, reports = [], [], {}
    started = time.time()
    for grid in args.grids.split(","):
        for name, edits in SCENARIOS:
            source = os.path.join(args.work, re.sub(r"\W+", "-", name) + ".mlir")
            with open(source, "w") as f:
                f.write(plan_text(edits))
            common = [args.fsdpc, source, f"--grid={grid}", "--target=cuda"]
            result = subprocess.run(common + ["--report=json"], capture_output=True, text=True)
            if result.returncode != 0:
                sys.exit(f"FAILED: {' '.join(common)}\n{result.stderr}")
            report = json.loads(result.stdout)
            reports[f"{name} @ {grid}"] = report
            per_rank, predicted = report["per_rank_bytes"], report["predicted"]
            arena = per_rank["arena"]
            needed = arena["arena_bytes"] + RUNTIME
            over = needed > BUDGET
            rows.append(
                f"| {name} | {grid} | {gib(per_rank['parameter_shards'] + per_rank['optimizer_state'])} "
                f"| {arena['arena_bytes']:,} | {arena.get('host_arena_bytes', 0):,} | {needed:,} "
                f"| {'no, ' + gib(needed - BUDGET) + ' over' if over else 'yes'} "
                f"| {predicted['step_seconds']:.2f} s | {predicted['exposed_communication_seconds']:.2f} s |")
            if over and not args.no_fit:
                search = subprocess.run(common + ["--device-memory=80GB", "-o", os.devnull],
                                        capture_output=True, text=True)
                listed = [line.strip() for line in search.stderr.splitlines()
                          if re.match(r"\s+\d\. ", line) or "plans compiled" in line
                          or line.startswith("no plan within")]
                fixes.append((f"{name}, {grid} GPUs", listed))
            print(f"  {name} @ {grid}: done ({time.time() - started:.0f} s)", file=sys.stderr,
                  flush=True)
    print("| plan | GPUs | sharded state (params + optimizer) | device arena (B) | host arena (B) "
          "| needed with the runtime (B) | fits 80 GB | predicted step | exposed communication |")
    print("|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    for scenario, listed in fixes:
        print(f"\n{scenario}: fixes proposed")
        for line in listed:
            print(f"    {line}")
    with open(os.path.join(os.path.dirname(args.work), "textbook-70b.json"), "w") as f:
        json.dump(reports, f, indent=1)


if __name__ == "__main__":
    main()
