#!/usr/bin/env python3
"""Compile time and peak memory of fsdpc against model depth, and the step time of the
trainers it builds, with and without fsdp-outline-kernels.

In one run:
  1. writes the small Llama family (examples/generate_llama.py --dim 512 --heads 8
     --kv-heads 8 --ffn 1408 --vocab 4096 --seq 256 --batch 8 --grid 1) at each of
     --layers, and compiles each to a trainer (`fsdpc --grid=1 --target=T -o trainer`)
     for each of --targets: wall time and peak memory (the child's maximum resident set);
  2. the same with `--outline-kernels=false` (the step as one LLVM function, as before
     fsdp-outline-kernels) up to --baseline-max-layers (its time grows with the square of
     the depth), and the ratio of the two;
  3. examples/llama-70b.mlir at grid 16 for each target (target: under 60 s and 4 GB);
  4. the step time of the small Llama at --step-layers on the CPU, both trainers
     alternating --rounds times, each the median of --steps timed steps after --warmup
     (step time = batch / samples_per_sec, the trainer's own clock): their ratio.

A benchmark, not a test: it exits 0 whether or not a target is met (1 only on errors).

    python3 bench/run_compile_bench.py --fsdpc build/bin/fsdpc [--layers 2,4,8,16,32]
        [--targets cpu,cuda] [--baseline-max-layers 8] [--json FILE]
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SMALL_LLAMA = ["--dim", "512", "--heads", "8", "--kv-heads", "8", "--ffn", "1408",
               "--vocab", "4096", "--seq", "256", "--batch", "8", "--grid", "1"]
BATCH = 8


def compile_measured(fsdpc, model, target, output, extra=()):
    """Compiles model; returns (seconds, peak MiB). The peak is read with wait4 on the child."""
    cmd = [fsdpc, model, f"--target={target}", "-o", output, *extra]
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the child: exec fsdpc with its output silenced
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        try:
            os.execv(fsdpc, cmd)
        finally:
            os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    seconds = time.monotonic() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed with status {os.waitstatus_to_exitcode(status)}")
    return seconds, usage.ru_maxrss / 1024.0


def write_small_llama(layers, path):
    text = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "generate_llama.py"),
                           "--layers", str(layers), *SMALL_LLAMA],
                          check=True, capture_output=True, text=True).stdout
    with open(path, "w") as f:
        f.write(text)


def median_step_seconds(trainer, steps, warmup, log):
    subprocess.run([trainer, "--steps", str(warmup + steps), "--log-every", str(warmup + steps),
                    "--log-json", log], check=True, capture_output=True, text=True)
    with open(log) as f:
        records = [r for r in map(json.loads, filter(str.strip, f)) if "step" in r]
    return [BATCH / r["samples_per_sec"] for r in records[warmup:]]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fsdpc", required=True)
    ap.add_argument("--layers", default="2,4,8,16,32")
    ap.add_argument("--targets", default="cpu,cuda")
    ap.add_argument("--baseline-max-layers", type=int, default=8,
                    help="compile with --outline-kernels=false up to this depth (0: never)")
    ap.add_argument("--no-70b", action="store_true", help="skip examples/llama-70b.mlir")
    ap.add_argument("--step-layers", type=int, default=4, help="0: skip the step-time comparison")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workdir")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    fsdpc = os.path.abspath(args.fsdpc)
    layers = [int(x) for x in args.layers.split(",")]
    targets = args.targets.split(",")
    workdir = args.workdir or tempfile.mkdtemp(prefix="fsdp-compile-bench-")
    os.makedirs(workdir, exist_ok=True)
    result = {"machine": {"cpu": platform.processor() or platform.machine(),
                          "cores": os.cpu_count()}, "compile": [], "llama70b": [], "step": None}

    print(f"fsdpc compile time and peak memory, small Llama (dim 512, 8 heads, ffn 1408, "
          f"vocab 4096, seq 256, batch 8), grid 1; {os.cpu_count()} cores")
    print(f"{'target':6} {'layers':>6} {'seconds':>8} {'MiB':>7} {'s/layer':>8}"
          f" {'one-function s':>15} {'MiB':>7} {'speed-up':>9}")
    for target in targets:
        for n in layers:
            model = os.path.join(workdir, f"llama{n}.mlir")
            if not os.path.exists(model):
                write_small_llama(n, model)
            trainer = os.path.join(workdir, f"llama{n}-{target}")
            seconds, mib = compile_measured(fsdpc, model, target, trainer, ["--grid=1"])
            row = {"target": target, "layers": n, "seconds": seconds, "peak_mib": mib}
            line = f"{target:6} {n:6d} {seconds:8.2f} {mib:7.0f} {seconds / n:8.3f}"
            if n <= args.baseline_max_layers:
                base_s, base_mib = compile_measured(fsdpc, model, target, trainer + "-one",
                                                    ["--grid=1", "--outline-kernels=false"])
                row.update(one_function_seconds=base_s, one_function_peak_mib=base_mib)
                line += f" {base_s:15.2f} {base_mib:7.0f} {base_s / seconds:8.1f}x"
            result["compile"].append(row)
            print(line, flush=True)

    if not args.no_70b:
        model = os.path.join(ROOT, "examples", "llama-70b.mlir")
        print("\nexamples/llama-70b.mlir (80 blocks), grid 16 (target: < 60 s, < 4096 MiB)")
        for target in targets:
            seconds, mib = compile_measured(fsdpc, model, target,
                                            os.path.join(workdir, f"llama70b-{target}"),
                                            ["--grid=16"])
            result["llama70b"].append({"target": target, "seconds": seconds, "peak_mib": mib})
            print(f"{target:6} {seconds:8.2f} s {mib:7.0f} MiB", flush=True)

    if args.step_layers and "cpu" in targets:
        n = args.step_layers
        model = os.path.join(workdir, f"llama{n}.mlir")
        if not os.path.exists(model):
            write_small_llama(n, model)
        outlined = os.path.join(workdir, "step-outlined")
        one = os.path.join(workdir, "step-one-function")
        compile_measured(fsdpc, model, "cpu", outlined, ["--grid=1"])
        compile_measured(fsdpc, model, "cpu", one, ["--grid=1", "--outline-kernels=false"])
        times = {"outlined": [], "one_function": []}
        for _ in range(args.rounds):
            for name, trainer in (("outlined", outlined), ("one_function", one)):
                times[name] += median_step_seconds(trainer, args.steps, args.warmup,
                                                   os.path.join(workdir, f"{name}.jsonl"))
        medians = {k: statistics.median(v) for k, v in times.items()}
        ratio = medians["outlined"] / medians["one_function"]
        result["step"] = {"layers": n, **{k + "_ms": v * 1e3 for k, v in medians.items()},
                          "ratio": ratio}
        print(f"\nstep time, small Llama {n} layers, 1 rank, median of "
              f"{args.rounds}x{args.steps} steps: outlined {medians['outlined'] * 1e3:.1f} ms,"
              f" one function {medians['one_function'] * 1e3:.1f} ms,"
              f" ratio {ratio:.3f} (target <= 1 within noise)")

    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
